// What the serving process and its workers share: how to give up, and whom to become.
import { execFileSync } from 'node:child_process';

/** uid and gid of a user, as beanstalkd -u USER ("become user and group"). */
export function lookupUser(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

export function fail(message: string): never {
  process.stderr.write(`redstalk: ${message}\n`);
  process.exit(1);
}
