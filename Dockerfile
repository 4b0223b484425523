# syntax=docker/dockerfile:1

# redstalk: a beanstalkd-compatible work queue that keeps its jobs in Redis.
#
#   docker build -t redstalk .
#   docker run -p 11300:11300 -v redstalk-data:/data redstalk
#       (embedded mode: starts its own redis-server, keeping its data in /data)
#   docker run -p 11300:11300 -e REDSTALK_REDIS_URL=redis://redis:6379 redstalk
#       (external Redis; any setting as REDSTALK_<NAME> or as a flag after the image)

# ---- build: type-check, then tsup -> dist/ (the command line is one bundle) ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# ---- runtime ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production

# redis-server for the embedded mode (used when no Redis URL is given).
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY lua ./lua
COPY protocol ./protocol

# The base image's unprivileged `node` user (uid 1000) owns the data directory.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node

# Inside a container the listen addresses must be 0.0.0.0, or published ports cannot reach them.
ENV REDSTALK_LISTEN=0.0.0.0 \
    REDSTALK_PORT=11300 \
    REDSTALK_HTTP=0.0.0.0:11301 \
    REDSTALK_DATA_DIR=/data \
    REDSTALK_LOG_FORMAT=json
EXPOSE 11300 11301

# No curl in the image: the command line asks its own /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "dist/cli.js", "healthcheck"]

# Exec form, so SIGTERM from `docker stop` reaches node directly (it stops in
# well under docker's 10 s: README, "Stopping").
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
