// The one dispatch point: every parsed command goes through here (and every
// reply through Session.answer), so counting, roles and body framing are
// decided once, from protocol/commands.json, for every command.
import type { ParsedCommand } from '../protocol/parser.js';
import type { CommandArgs, CommandName } from '../protocol/generated.js';
import { REPLY } from '../protocol/replies.js';
import type { CommandSpec } from '../protocol/spec.js';
import { BATCH_RULES, HANDLERS } from './index.js';
import type { Handler, Services, Session } from './session.js';

/** What the dispatcher asks of a connection for a command with a body. */
export interface BodyFraming {
  /** Read `bytes` plus the terminator, then hand them to Dispatcher.body. */
  readBody(cmd: ParsedCommand, bytes: number): void;
  /** Drop `bytes` plus the terminator, then answer JOB_TOO_BIG. */
  skipBody(bytes: number): void;
}

/** Index of the argument that gives the body's length, per body command. */
const bodyLengthArg = new Map<CommandSpec, number>();

function bodyLength(cmd: ParsedCommand): number {
  let i = bodyLengthArg.get(cmd.spec);
  if (i === undefined) {
    i = cmd.spec.args.findIndex((a) => a.name === cmd.spec.body!.lengthFrom);
    bodyLengthArg.set(cmd.spec, i);
  }
  return cmd.args[i] as number;
}

function handlerOf(cmd: ParsedCommand): Handler<CommandName> {
  return HANDLERS[cmd.spec.name as CommandName] as Handler<CommandName>;
}

/** The parser produced the argument kinds of the spec, which CommandArgs was generated from. */
function argsOf(cmd: ParsedCommand): CommandArgs[CommandName] {
  return cmd.args as CommandArgs[CommandName];
}

export class Dispatcher {
  constructor(private readonly svc: Services) {}

  /** Whether cmd may run while this session's batched commands are in flight (it joins the batch). */
  joinsBatch(s: Session, cmd: ParsedCommand): boolean {
    const rule = BATCH_RULES[cmd.spec.name as CommandName] as ((s: Session, args: unknown) => boolean) | undefined;
    if (!rule) return false;
    if (cmd.spec.body && (cmd.trailing || bodyLength(cmd) > this.svc.maxJobSize)) return false;
    return rule(s, cmd.args);
  }

  /** A command line arrived: count it, then run it, or read its body first. */
  command(s: Session & BodyFraming, cmd: ParsedCommand): Promise<void> | void {
    const { spec } = cmd;
    if (!s.authorized && spec.name !== 'auth') {
      // Nothing runs before auth; a body is still read, so the stream stays in step.
      if (spec.body && !cmd.trailing && bodyLength(cmd) <= this.svc.maxJobSize) return s.readBody(cmd, bodyLength(cmd));
      return s.answer(REPLY.UNAUTHORIZED);
    }
    if (spec.counter) this.svc.countCommand(spec.counter);
    if (spec.body) {
      const bytes = bodyLength(cmd);
      if (bytes > this.svc.maxJobSize) return s.skipBody(bytes);
      if (cmd.trailing) return s.answer(REPLY.BAD_FORMAT);
      if (spec.role === 'producer') s.becomeProducer();
      return s.readBody(cmd, bytes);
    }
    if (spec.role === 'worker') s.becomeWorker();
    return handlerOf(cmd)(s, argsOf(cmd), this.svc, null);
  }

  /** The body of a command arrived: its data and terminator. */
  body(s: Session, cmd: ParsedCommand, chunk: Buffer): Promise<void> | void {
    if (!s.authorized) return s.answer(REPLY.UNAUTHORIZED);
    const n = chunk.length - 2;
    const terminated = chunk[n] === 13 && chunk[n + 1] === 10;
    return handlerOf(cmd)(s, argsOf(cmd), this.svc, terminated ? chunk.subarray(0, n) : null);
  }
}

/** Commands of protocol/commands.json that have no handler (the compiler checks this too). */
export function unhandledCommands(names: readonly string[]): string[] {
  return names.filter((name) => !(name in HANDLERS));
}
