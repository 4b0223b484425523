// redstalk-client: a promise client for redstalk (and beanstalkd), and a worker helper.
export {
  Client, connect, DEFAULT_PRIORITY, DEFAULT_TTR, type ConnectOptions, type OnExpiry, type PutOptions, type PutWithOptions,
  type ReleaseOptions, type RetryOptions, type RoomConfig, type TubeSetting,
} from './client.js';
export { DECODERS, type Check, type CommandName, type Entry, type Job, type PutResult, type Result, type Waiting } from './commands.js';
export {
  BadFormatError, BuriedError, UnauthorizedError, ConnectionError, DeadlineSoonError, DrainingError, ERROR_CLASSES, errorFor, ExpectedCrlfError,
  InternalError, JobTooBigError, NotFoundError, NotIgnoredError, OutOfMemoryError, RedstalkError, TimedOutError,
  UnexpectedReplyError, UnknownCommandError,
} from './errors.js';
export { MalformedReplyError, ReplyReader, type Reply } from './reader.js';
export { Worker, backoffSeconds, type Handler, type WorkerOptions } from './worker.js';
export type { JobStats, RoomStats, ServerStats, TubeStats } from './yaml.js';
