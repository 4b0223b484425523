# syntax=docker/dockerfile:1

# redstalk: a beanstalkd-compatible work queue that keeps its jobs in Redis.
#
#   docker build -t redstalk .
#   docker run -p 11300:11300 -v redstalk-data:/data redstalk
#       (embedded mode: starts its own redis-server, keeping its data in /data)
#   docker run -p 11300:11300 redstalk -l 0.0.0.0 -p 11300 --redis redis://redis:6379
#       (external Redis; arguments replace the default CMD)

# ---- build: compile TypeScript with tsup -> dist/cli.js, dist/index.js ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

# ---- runtime ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production

# redis-server for the embedded mode (used when no --redis URL is given).
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY lua ./lua
COPY protocol ./protocol

# The base image's unprivileged `node` user (uid 1000) owns the data directory.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node

EXPOSE 11300

# Exec form, so SIGTERM from `docker stop` reaches node directly. Inside a container the
# listen address must be 0.0.0.0, or the published port cannot reach it.
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["-l", "0.0.0.0", "-p", "11300", "--data-dir", "/data"]
