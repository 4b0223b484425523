module github.com/redstalk/redstalk/clients/go

go 1.19
