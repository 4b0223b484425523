package redstalk

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

func read(s string) (reply, error) {
	return readReply(bufio.NewReader(strings.NewReader(s)), nil)
}

func TestReadReply(t *testing.T) {
	rp, err := read("RESERVED-MANY 2\r\nRESERVED 4 2\r\nab\r\nRESERVED 9 0\r\n\r\n")
	if err != nil || len(rp.jobs) != 2 || rp.jobs[0].ID != 4 || string(rp.jobs[0].Body) != "ab" ||
		rp.jobs[1].ID != 9 || len(rp.jobs[1].Body) != 0 {
		t.Fatalf("RESERVED-MANY = %+v, %v", rp, err)
	}
	rp, err = read("FOUND 1 4\r\n\r\n\r\n\r\n")
	if err != nil || string(rp.job.Body) != "\r\n\r\n" {
		t.Fatalf("FOUND = %+v, %v", rp, err)
	}
	rp, err = read("OK 4\r\n---\n\r\n")
	if err != nil || string(rp.body) != "---\n" {
		t.Fatalf("OK = %+v, %v", rp, err)
	}
	rp, err = read("DUPLICATE 7\r\n") // put-with's: a line without a body
	if err != nil || rp.word != "DUPLICATE" || len(rp.args) != 1 || rp.args[0] != "7" {
		t.Fatalf("DUPLICATE = %+v, %v", rp, err)
	}
	rp, err = read("OK\r\n")
	if err != nil || rp.word != "OK" || rp.body != nil {
		t.Fatalf("bare OK = %+v, %v", rp, err)
	}
	for _, bad := range []string{
		"INSERTED 1\n",           // bare LF
		"FOUND 1 5\r\nhello\n\n", // body not followed by CRLF
		"FOUND x 5\r\nhello\r\n", // id not a number
		"RESERVED-MANY 2\r\nRESERVED 1 1\r\na\r\nTIMED_OUT\r\n", // a block that is not RESERVED
		"OK 99999999999\r\n",                // absurd length
		"FOUND 1 5\r\nhel",                  // cut short
		strings.Repeat("x", 70000) + "\r\n", // endless line
	} {
		if _, err := read(bad); err == nil {
			t.Errorf("read(%.40q) accepted", bad)
		}
	}
}

func TestYAML(t *testing.T) {
	m, err := parseYAMLMap([]byte("---\nname: \"a b\"\nstate: ready\nempty: \"\"\n"))
	if err != nil || m["name"] != "a b" || m["state"] != "ready" || m["empty"] != "" {
		t.Fatalf("map = %v, %v", m, err)
	}
	l, err := parseYAMLList([]byte("---\n- default\n- x y\n"))
	if err != nil || len(l) != 2 || l[1] != "x y" {
		t.Fatalf("list = %q, %v", l, err)
	}
	for _, bad := range []string{"name: x\n", "---\nno colon\n", "---\nk: v"} {
		if _, err := parseYAMLMap([]byte(bad)); err == nil {
			t.Errorf("parseYAMLMap(%q) accepted", bad)
		}
	}
	if _, err := parseYAMLList([]byte("---\nnot an item\n")); err == nil {
		t.Error("parseYAMLList accepted a non-item")
	}

	var js JobStats
	err = decodeStats(map[string]string{"id": "18446744073709551615", "pri": "4294967295", "ttr": "3",
		"state": "buried", "newer-key": "ignored"}, &js)
	if err != nil || js.ID != 1<<64-1 || js.Pri != 1<<32-1 || js.TTR != 3*time.Second || js.State != "buried" {
		t.Fatalf("JobStats = %+v, %v", js, err)
	}
	var rs RoomStats
	err = decodeStats(map[string]string{"paused": "true", "admission-rate": "2.500"}, &rs)
	if err != nil || !rs.Paused || rs.AdmissionRate != 2.5 {
		t.Fatalf("RoomStats = %+v, %v", rs, err)
	}
	if err := decodeStats(map[string]string{"pri": "4294967296"}, &js); err == nil {
		t.Error("pri beyond u32 accepted")
	}
}
