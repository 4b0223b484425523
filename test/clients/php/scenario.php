<?php
/**
 * Producer/worker scenario for Pheanstalk 4 (Debian: php-pda-pheanstalk) against any
 * beanstalkd-protocol server.
 *
 *   php test/clients/php/scenario.php HOST PORT
 *
 * Uses the library the way its README shows it (Pheanstalk::create, useTube/put,
 * watch/reserve/delete ...). Prints `OK <n> checks` and exits 0 when every check holds;
 * otherwise prints `FAIL: ...` on stderr and exits 1 (2 for an unexpected exception).
 *
 * Library notes (the same against beanstalkd):
 * - Job bodies are PHP byte strings: NULs, CRLFs and non-UTF-8 bytes go through as-is.
 * - stats / stats-tube / stats-job come back as an ArrayResponse of *strings*; its YAML
 *   reader does not unquote, so a quoted value keeps its quotes. beanstalkd 1.12 quotes
 *   only `version`; 1.13 (and redstalk, which serves 1.13) also quotes `name`
 *   (stats-tube), `tube` (stats-job), `hostname`, `os`, `platform`. Those fields are
 *   compared with unquote() below, and the raw form is checked to be one of the two.
 * - watch/ignore/useTube are skipped client-side when Pheanstalk thinks nothing changes.
 */

declare(strict_types=1);

// Debian installs the library with its own autoloader on PHP's include_path
// (/usr/share/php); a Composer install provides vendor/autoload.php instead.
if ((@include_once 'Pheanstalk/autoload.php') === false) {
    fwrite(STDERR, "FAIL: Pheanstalk not found (apt-get install php-pda-pheanstalk)\n");
    exit(2);
}

use Pheanstalk\Exception\JobNotFoundException;
use Pheanstalk\Exception\ServerException;
use Pheanstalk\Job;
use Pheanstalk\Pheanstalk;

if ($argc !== 3 || !ctype_digit($argv[2])) {
    fwrite(STDERR, "usage: php scenario.php HOST PORT\n");
    exit(2);
}
$host = $argv[1];
$port = (int) $argv[2];

$checks = 0;

function fail(string $msg): void
{
    fwrite(STDERR, "FAIL: $msg\n");
    exit(1);
}

/** @param mixed $actual @param mixed $expected */
function eq(string $what, $actual, $expected): void
{
    global $checks;
    $checks++;
    if ($actual !== $expected) {
        fail(sprintf('%s: expected %s, got %s', $what, var_export($expected, true), var_export($actual, true)));
    }
}

function ok(string $what, bool $cond, string $detail = ''): void
{
    global $checks;
    $checks++;
    if (!$cond) {
        fail($what . ($detail !== '' ? " ($detail)" : ''));
    }
}

/** Runs $fn, which must throw $class (optionally with a message containing $needle). */
function throws(string $what, string $class, callable $fn, string $needle = ''): void
{
    global $checks;
    $checks++;
    try {
        $fn();
    } catch (\Throwable $e) {
        if (!($e instanceof $class)) {
            fail(sprintf('%s: expected %s, got %s: %s', $what, $class, get_class($e), $e->getMessage()));
        }
        if ($needle !== '' && strpos($e->getMessage(), $needle) === false) {
            fail(sprintf('%s: expected a message containing %s, got %s', $what, $needle, $e->getMessage()));
        }
        return;
    }
    fail("$what: expected $class, nothing was thrown");
}

/** A value that beanstalkd 1.12 prints bare and 1.13 in double quotes; checks it is one of both. */
function unquote(string $what, $raw): string
{
    ok("$what is a string", is_string($raw), var_export($raw, true));
    $quoted = preg_match('/^"(.*)"$/s', $raw, $m) === 1;
    $value = $quoted ? $m[1] : $raw;
    ok("$what is bare or fully quoted", strpos($value, '"') === false, $raw);
    return $value;
}

function hexdump(string $s): string
{
    return strlen($s) . ' bytes ' . bin2hex($s);
}

function sameBody(string $what, string $actual, string $expected): void
{
    global $checks;
    $checks++;
    if ($actual !== $expected) {
        fail(sprintf('%s: body mismatch, expected %s, got %s', $what, hexdump($expected), hexdump($actual)));
    }
}

function reserveOrFail(Pheanstalk $w, string $what, int $timeout = 5): Job
{
    $job = $w->reserveWithTimeout($timeout);
    if ($job === null) {
        fail("$what: reserve-with-timeout $timeout timed out");
    }
    return $job;
}

function main(string $host, int $port): void
{
    global $checks;
    $tube = 'php-scenario-' . getmypid() . '-' . bin2hex(random_bytes(3));

    // Bytes that break line-based parsers: NULs, an inner CRLF, non-UTF-8, a trailing CRLF.
    $binary = "\x00bin\r\n\x00\xff\xfe\x80\r\n";
    $jobs = [
        'A' => ['body' => 'alpha', 'pri' => 100, 'delay' => 0, 'ttr' => 60],
        'B' => ['body' => $binary, 'pri' => 10, 'delay' => 0, 'ttr' => 60],
        'C' => ['body' => 'charlie: ünïcödé ✓ "quoted"', 'pri' => 50, 'delay' => 0, 'ttr' => 30],
        'D' => ['body' => 'delta (put with delay 3)', 'pri' => 1, 'delay' => 3, 'ttr' => 60],
    ];

    // ---- producer ------------------------------------------------------------------
    $producer = Pheanstalk::create($host, $port);
    // A job in `default`, more urgent than everything: the worker ignores `default`.
    $z = $producer->put('must stay in default', 0);
    $producer->useTube($tube);
    eq('list-tube-used (asking the server)', $producer->listTubeUsed(true), $tube);

    $ids = [];
    $lastId = $z->getId();
    foreach ($jobs as $name => $j) {
        $job = $producer->put($j['body'], $j['pri'], $j['delay'], $j['ttr']);
        ok("put $name returns a larger id", $job->getId() > $lastId, "id {$job->getId()} after $lastId");
        $ids[$name] = $lastId = $job->getId();
    }
    $putAt = microtime(true);

    $ready = $producer->peekReady();
    ok('peek-ready finds a job', $ready !== null);
    eq('peek-ready is the most urgent ready job (B)', $ready->getId(), $ids['B']);
    sameBody('peek-ready body', $ready->getData(), $binary);
    $delayed = $producer->peekDelayed();
    ok('peek-delayed finds a job', $delayed !== null);
    eq('peek-delayed is D', $delayed->getId(), $ids['D']);
    eq('peek-buried on a tube with no buried job', $producer->peekBuried(), null);
    $peeked = $producer->peek(new \Pheanstalk\JobId($ids['C']));
    eq('peek <id> id', $peeked->getId(), $ids['C']);
    sameBody('peek <id> body (UTF-8 text)', $peeked->getData(), $jobs['C']['body']);

    $ts = $producer->statsTube($tube);
    eq('stats-tube name', unquote('stats-tube name', $ts['name']), $tube);
    eq('stats-tube current-jobs-ready', $ts['current-jobs-ready'], '3');
    eq('stats-tube current-jobs-urgent', $ts['current-jobs-urgent'], '3');
    eq('stats-tube current-jobs-delayed', $ts['current-jobs-delayed'], '1');
    eq('stats-tube total-jobs', $ts['total-jobs'], '4');
    eq('stats-tube current-using (ArrayResponse property access)', $ts->current_using, '1');

    $sj = $producer->statsJob($peeked);
    eq('stats-job C id', $sj['id'], (string) $ids['C']);
    eq('stats-job C tube', unquote('stats-job tube', $sj['tube']), $tube);
    eq('stats-job C state', $sj['state'], 'ready');
    eq('stats-job C pri', $sj['pri'], '50');
    eq('stats-job C ttr', $sj['ttr'], '30');
    eq('stats-job C reserves', $sj['reserves'], '0');

    $tubes = $producer->listTubes();
    ok('list-tubes has the scenario tube', in_array($tube, $tubes, true), implode(',', $tubes));
    ok('list-tubes has default', in_array('default', $tubes, true), implode(',', $tubes));

    // ---- worker --------------------------------------------------------------------
    $worker = Pheanstalk::create($host, $port);
    $worker->watch($tube)->ignore('default');
    eq('list-tubes-watched (asking the server)', $worker->listTubesWatched(true), [$tube]);
    throws('ignore the last watched tube', ServerException::class, fn () => $worker->ignore($tube), 'NOT_IGNORED');

    // B (pri 10): inspect, touch, delete.
    $b = $worker->reserve();
    eq('1st reserve is B (pri 10; Z in ignored default has pri 0)', $b->getId(), $ids['B']);
    sameBody('reserved B body (NUL, CRLF, non-UTF-8 bytes)', $b->getData(), $binary);
    $sj = $worker->statsJob($b);
    eq('stats-job B state', $sj['state'], 'reserved');
    eq('stats-job B reserves', $sj['reserves'], '1');
    eq('stats-job B ttr', $sj['ttr'], '60');
    $worker->touch($b);
    $left = (int) $worker->statsJob($b)['time-left'];
    ok('stats-job B time-left after touch is about the ttr', $left >= 57 && $left <= 60, "time-left $left");
    $worker->delete($b);
    throws('peek a deleted job', JobNotFoundException::class, fn () => $worker->peek($b));
    throws('delete a deleted job', JobNotFoundException::class, fn () => $worker->delete($b));
    throws('touch a deleted job', JobNotFoundException::class, fn () => $worker->touch($b));
    throws('stats-job of a deleted job', ServerException::class, fn () => $worker->statsJob($b), 'NOT_FOUND');

    // C (pri 50): bury, kick (tube-wide), bury again, kick-job, then delete.
    $c = $worker->reserve();
    eq('2nd reserve is C (pri 50)', $c->getId(), $ids['C']);
    sameBody('reserved C body', $c->getData(), $jobs['C']['body']);
    $worker->bury($c, 50);
    $buried = $producer->peekBuried();
    ok('peek-buried finds a job', $buried !== null);
    eq('peek-buried is C', $buried->getId(), $ids['C']);
    eq('stats-tube current-jobs-buried', $producer->statsTube($tube)['current-jobs-buried'], '1');
    eq('kick 10 kicks the one buried job (not the delayed D)', $producer->kick(10), 1);
    $sj = $worker->statsJob($c);
    eq('stats-job C state after kick', $sj['state'], 'ready');
    eq('stats-job C buries', $sj['buries'], '1');
    eq('stats-job C kicks', $sj['kicks'], '1');
    $c = $worker->reserve();
    eq('3rd reserve is C again (kicked)', $c->getId(), $ids['C']);
    $worker->bury($c);
    $producer->kickJob($c);
    $sj = $producer->statsJob($c);
    eq('stats-job C state after kick-job', $sj['state'], 'ready');
    eq('stats-job C kicks after kick-job', $sj['kicks'], '2');
    eq('stats-job C pri after bury with the default priority', $sj['pri'], '1024');
    throws('kick-job of a ready job', JobNotFoundException::class, fn () => $producer->kickJob($c));

    // A (pri 100) now beats C (re-buried with the default pri 1024): release it with a 1 s delay.
    $a = $worker->reserve();
    eq('4th reserve is A (pri 100 < C\'s new 1024)', $a->getId(), $ids['A']);
    sameBody('reserved A body', $a->getData(), 'alpha');
    $worker->release($a, 100, 1);
    $releasedAt = microtime(true);
    $c = reserveOrFail($worker, 'C after kick-job');
    eq('5th reserve is C again (kick-job; A is delayed)', $c->getId(), $ids['C']);
    sameBody('reserved C body after two buries', $c->getData(), $jobs['C']['body']);
    $worker->delete($c);

    $sj = $worker->statsJob($a);
    eq('stats-job A state after release with delay', $sj['state'], 'delayed');
    eq('stats-job A releases', $sj['releases'], '1');
    eq('stats-job A delay', $sj['delay'], '1');
    $ts = $worker->statsTube($tube);
    eq('stats-tube current-jobs-delayed (A and D)', $ts['current-jobs-delayed'], '2');
    eq('stats-tube current-jobs-ready', $ts['current-jobs-ready'], '0');
    eq('stats-tube current-jobs-reserved', $ts['current-jobs-reserved'], '0');
    eq('stats-tube current-watching', $ts['current-watching'], '1');
    eq('reserve-with-timeout 0 with only delayed jobs', $worker->reserveWithTimeout(0), null);
    $a = reserveOrFail($worker, 'A after its release delay');
    eq('reserve after the release delay gets A', $a->getId(), $ids['A']);
    $waited = microtime(true) - $releasedAt;
    ok('A came back after its 1 s delay', $waited >= 0.5 && $waited < 4, sprintf('after %.2f s', $waited));
    $worker->delete($a);

    // pause-tube / resume.
    $producer->pauseTube($tube, 60);
    $ts = $producer->statsTube($tube);
    eq('stats-tube pause', $ts['pause'], '60');
    $left = (int) $ts['pause-time-left'];
    ok('stats-tube pause-time-left', $left >= 58 && $left <= 60, "pause-time-left $left");
    $producer->resumeTube($tube);
    $ts = $producer->statsTube($tube);
    eq('stats-tube pause after resume', $ts['pause'], '0');
    eq('stats-tube cmd-pause-tube', $ts['cmd-pause-tube'], '2');
    throws('pause-tube of a missing tube', ServerException::class,
        fn () => $producer->pauseTube($tube . '-missing', 1), 'NOT_FOUND');

    // D: put with delay 3, comes by itself.
    $d = reserveOrFail($worker, 'D after its put delay');
    eq('reserve gets the delayed D', $d->getId(), $ids['D']);
    sameBody('reserved D body', $d->getData(), $jobs['D']['body']);
    $waited = microtime(true) - $putAt;
    ok('D came after its 3 s delay', $waited >= 2.5, sprintf('after %.2f s', $waited));
    $sj = $worker->statsJob($d);
    eq('stats-job D pri', $sj['pri'], '1');
    eq('stats-job D delay', $sj['delay'], '3');
    $worker->delete($d);

    // Nothing left: a reserve with a timeout times out (after about that long).
    $t0 = microtime(true);
    eq('reserve-with-timeout 1 on an empty tube', $worker->reserveWithTimeout(1), null);
    $waited = microtime(true) - $t0;
    ok('reserve-with-timeout 1 waited about 1 s', $waited >= 0.5 && $waited < 3, sprintf('%.2f s', $waited));
    eq('peek-ready on the emptied tube', $producer->peekReady(), null);
    eq('peek-delayed on the emptied tube', $producer->peekDelayed(), null);
    eq('peek-buried on the emptied tube', $producer->peekBuried(), null);

    $ts = $producer->statsTube($tube);
    eq('final stats-tube total-jobs', $ts['total-jobs'], '4');
    eq('final stats-tube cmd-delete', $ts['cmd-delete'], '4');
    foreach (['urgent', 'ready', 'reserved', 'delayed', 'buried'] as $state) {
        eq("final stats-tube current-jobs-$state", $ts["current-jobs-$state"], '0');
    }

    // Z stayed in default, untouched by the worker.
    $zPeek = $producer->peek($z);
    sameBody('the default-tube job is still there', $zPeek->getData(), 'must stay in default');
    eq('stats-job Z reserves', $producer->statsJob($z)['reserves'], '0');
    $producer->delete($z);

    $st = $producer->stats();
    $version = unquote('stats version', $st['version']);
    ok('stats version', preg_match('/^1\.\d+/', $version) === 1, $version);
    ok('stats version is quoted', preg_match('/^".*"$/', $st['version']) === 1, $st['version']);
    ok('stats cmd-put counts our puts', (int) $st['cmd-put'] >= 5, $st['cmd-put']);
    ok('stats total-jobs', (int) $st['total-jobs'] >= 5, $st['total-jobs']);
    ok('stats current-connections (producer and worker)', (int) $st['current-connections'] >= 2, $st['current-connections']);
    ok('stats current-tubes', (int) $st['current-tubes'] >= 2, $st['current-tubes']);
    eq('stats max-job-size', $st['max-job-size'], '65535');
    eq('stats draining', $st['draining'], 'false');
    ok('stats uptime', ctype_digit($st['uptime']), $st['uptime']);
    unquote('stats hostname', $st['hostname']);

    echo "OK $checks checks\n";
}

try {
    main($host, $port);
} catch (\Throwable $e) {
    fwrite(STDERR, sprintf("FAIL: unexpected %s: %s\n%s\n", get_class($e), $e->getMessage(), $e->getTraceAsString()));
    exit(2);
}
exit(0);
