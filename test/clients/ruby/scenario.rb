# frozen_string_literal: true
#
# Producer/worker scenario for beaneater 1.x (Debian: ruby-beaneater) against any
# beanstalkd-protocol server.
#
#   ruby test/clients/ruby/scenario.rb HOST PORT
#
# Uses the library the way its README shows it (Beaneater.new, tubes[...].put,
# tubes.watch!/reserve, job.delete/release/bury/touch/kick, jobs.register + process!).
# Prints `OK <n> checks` and exits 0 when every check holds; otherwise prints
# `FAIL: ...` on stderr and exits 1 (2 for an unexpected exception, 3 for a hang).
#
# Library notes (the same against beanstalkd):
# - Job ids (put's :id, Job#id) are strings; stats values are parsed with YAML, so counts
#   are Integers and quoted values (`version`, and in 1.13 also `name`/`tube`/`hostname`)
#   come back unquoted.
# - Bodies go out and come back as bytes (ASCII-8BIT): NULs, CRLFs and non-UTF-8 bytes
#   survive.
# - Job#bury and Job#release without :pri keep the job's priority (read via stats-job).
# - `process!` raising AbortProcessingError stops the loop and buries the current job.

require 'beaneater'

unless ARGV.length == 2 && ARGV[1] =~ /\A\d+\z/
  warn 'usage: ruby scenario.rb HOST PORT'
  exit 2
end
HOST = ARGV[0]
PORT = Integer(ARGV[1])

class ScenarioFailure < StandardError; end

# Fails the script clearly instead of hanging on a reserve that never comes back.
Thread.new do
  sleep 25
  warn 'FAIL: scenario did not finish within 25 s'
  exit!(3)
end

$checks = 0

def fail!(msg)
  raise ScenarioFailure, msg
end

def eq(what, actual, expected)
  $checks += 1
  fail!("#{what}: expected #{expected.inspect}, got #{actual.inspect}") unless actual == expected
end

def ok(what, cond, detail = nil)
  $checks += 1
  fail!(detail ? "#{what} (#{detail})" : what) unless cond
end

def same_body(what, actual, expected)
  $checks += 1
  return if actual.b == expected.b

  fail!("#{what}: body mismatch, expected #{expected.bytesize} bytes #{expected.unpack1('H*')}, " \
        "got #{actual.bytesize} bytes #{actual.unpack1('H*')}")
end

def raises(what, klass)
  $checks += 1
  begin
    yield
  rescue ScenarioFailure
    raise
  rescue StandardError => e
    fail!("#{what}: expected #{klass}, got #{e.class}: #{e.message}") unless e.is_a?(klass)
    return e
  end
  fail!("#{what}: expected #{klass}, nothing was raised")
end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

class RetryMe < StandardError; end

def scenario
  tube_name = "rb-scenario-#{Process.pid}-#{rand(16**6).to_s(16)}"
  # Bytes that break line-based parsers: NULs, an inner CRLF, non-UTF-8, a trailing CRLF.
  binary = "\x00bin\r\n\x00\xff\xfe\x80\r\n".b
  jobs = {
    'A' => { body: 'alpha', pri: 100, delay: 0, ttr: 60 },
    'B' => { body: binary, pri: 10, delay: 0, ttr: 60 },
    'C' => { body: 'charlie: ünïcödé ✓ "quoted"', pri: 50, delay: 0, ttr: 30 },
    'D' => { body: 'delta (put with delay 3)', pri: 1, delay: 3, ttr: 60 }
  }

  # ---- producer ------------------------------------------------------------------
  producer = Beaneater.new("#{HOST}:#{PORT}")
  # A job in `default`, more urgent than everything: the worker will not watch `default`.
  z = producer.tubes['default'].put('must stay in default', pri: 0)
  eq('put status', z[:status], 'INSERTED')
  z_id = z[:id]
  ok('put id is a numeric string', z_id.is_a?(String) && z_id =~ /\A\d+\z/, z_id.inspect)

  tube = producer.tubes[tube_name]
  ids = {}
  last = Integer(z_id)
  jobs.each do |name, j|
    res = tube.put(j[:body], pri: j[:pri], delay: j[:delay], ttr: j[:ttr])
    ok("put #{name} returns a larger id", Integer(res[:id]) > last, "#{res[:id]} after #{last}")
    ids[name] = res[:id]
    last = Integer(res[:id])
  end
  put_at = now
  eq('tubes.used (list-tube-used)', producer.tubes.used.name, tube_name)

  ready = tube.peek(:ready)
  ok('peek(:ready) finds a job', !ready.nil?)
  eq('peek(:ready) is the most urgent ready job (B)', ready.id, ids['B'])
  same_body('peek(:ready) body', ready.body, binary)
  delayed = tube.peek(:delayed)
  ok('peek(:delayed) finds a job', !delayed.nil?)
  eq('peek(:delayed) is D', delayed.id, ids['D'])
  eq('peek(:buried) on a tube with no buried job', tube.peek(:buried), nil)
  peeked = producer.jobs.find(ids['C'])
  eq('jobs.find (peek <id>) id', peeked.id, ids['C'])
  same_body('jobs.find body (UTF-8 text)', peeked.body, jobs['C'][:body])

  ts = tube.stats
  eq('stats-tube name', ts.name, tube_name)
  eq('stats-tube current_jobs_ready', ts.current_jobs_ready, 3)
  eq('stats-tube current_jobs_urgent', ts.current_jobs_urgent, 3)
  eq('stats-tube current_jobs_delayed', ts.current_jobs_delayed, 1)
  eq('stats-tube total_jobs', ts.total_jobs, 4)
  eq('stats-tube current_using', ts.current_using, 1)

  sj = peeked.stats
  eq('stats-job C id', sj.id, Integer(ids['C']))
  eq('stats-job C tube', sj.tube, tube_name)
  eq('stats-job C state', sj.state, 'ready')
  eq('stats-job C pri', sj.pri, 50)
  eq('stats-job C ttr', sj.ttr, 30)
  eq('stats-job C reserves', sj.reserves, 0)
  eq('Job#tube', peeked.tube, tube_name)

  all = producer.tubes.all.map(&:name)
  ok('tubes.all (list-tubes) has the scenario tube', all.include?(tube_name), all.inspect)
  ok('tubes.all has default', all.include?('default'), all.inspect)

  # ---- worker --------------------------------------------------------------------
  worker = Beaneater.new("#{HOST}:#{PORT}")
  worker.tubes.watch!(tube_name)
  eq('tubes.watched (list-tubes-watched)', worker.tubes.watched.map(&:name), [tube_name])
  raises('ignore the last watched tube', Beaneater::NotIgnoredError) { worker.tubes.ignore(tube_name) }

  # B (pri 10): inspect, touch, delete.
  b = worker.tubes.reserve
  eq('1st reserve is B (pri 10; Z in the unwatched default has pri 0)', b.id, ids['B'])
  same_body('reserved B body (NUL, CRLF, non-UTF-8 bytes)', b.body, binary)
  sj = b.stats
  eq('stats-job B state', sj.state, 'reserved')
  eq('stats-job B reserves', sj.reserves, 1)
  eq('stats-job B ttr', sj.ttr, 60)
  ok('Job#reserved?', b.reserved?)
  eq('touch', b.touch[:status], 'TOUCHED')
  left = b.stats.time_left
  ok('stats-job B time-left after touch is about the ttr', left.is_a?(Integer) && left.between?(57, 60), "time-left #{left.inspect}")
  eq('delete', b.delete[:status], 'DELETED')
  ok('Job#exists? after delete', !b.exists?)
  eq('jobs.find of a deleted job', producer.jobs.find(b.id), nil)
  raises('delete a deleted job', Beaneater::NotFoundError) { b.delete }
  raises('stats-job of a deleted job', Beaneater::NotFoundError) { b.stats }

  # C (pri 50): bury, kick (tube-wide), bury again, kick-job, then delete.
  c = worker.tubes.reserve
  eq('2nd reserve is C (pri 50)', c.id, ids['C'])
  same_body('reserved C body', c.body, jobs['C'][:body])
  eq('bury', c.bury[:status], 'BURIED')
  eq('stats-job C state after bury', c.stats.state, 'buried')
  buried = tube.peek(:buried)
  ok('peek(:buried) finds a job', !buried.nil?)
  eq('peek(:buried) is C', buried.id, ids['C'])
  eq('stats-tube current_jobs_buried', tube.stats.current_jobs_buried, 1)
  kicked = tube.kick(10)
  eq('kick 10 status', kicked[:status], 'KICKED')
  eq('kick 10 kicks the one buried job (not the delayed D)', kicked[:id], '1')
  sj = c.stats
  eq('stats-job C state after kick', sj.state, 'ready')
  eq('stats-job C buries', sj.buries, 1)
  eq('stats-job C kicks', sj.kicks, 1)
  c = worker.tubes.reserve
  eq('3rd reserve is C again (kicked)', c.id, ids['C'])
  c.bury
  eq('Job#kick (kick-job)', c.kick[:status], 'KICKED')
  sj = c.stats
  eq('stats-job C state after kick-job', sj.state, 'ready')
  eq('stats-job C kicks after kick-job', sj.kicks, 2)
  eq('stats-job C pri after bury (beaneater keeps the pri)', sj.pri, 50)
  raises('kick-job of a ready job', Beaneater::NotFoundError) { c.kick }
  c = worker.tubes.reserve(5)
  eq('4th reserve is C again (pri 50 < A\'s 100)', c.id, ids['C'])
  c.delete

  # A (pri 100): release with a 1 s delay, then wait for it.
  a = worker.tubes.reserve(5)
  eq('5th reserve is A (pri 100)', a.id, ids['A'])
  same_body('reserved A body', a.body, 'alpha')
  eq('release', a.release(delay: 1)[:status], 'RELEASED')
  released_at = now
  sj = a.stats
  eq('stats-job A state after release with delay', sj.state, 'delayed')
  eq('stats-job A releases', sj.releases, 1)
  eq('stats-job A delay', sj.delay, 1)
  eq('stats-job A pri after release (kept)', sj.pri, 100)
  ts = tube.stats
  eq('stats-tube current_jobs_delayed (A and D)', ts.current_jobs_delayed, 2)
  eq('stats-tube current_jobs_ready', ts.current_jobs_ready, 0)
  eq('stats-tube current_jobs_reserved', ts.current_jobs_reserved, 0)
  eq('stats-tube current_watching', ts.current_watching, 1)
  raises('reserve(0) with only delayed jobs', Beaneater::TimedOutError) { worker.tubes.reserve(0) }
  a = worker.tubes.reserve(5)
  eq('reserve after the release delay gets A', a.id, ids['A'])
  waited = now - released_at
  ok('A came back after its 1 s delay', waited >= 0.5 && waited < 4, format('after %.2f s', waited))
  a.delete

  # pause-tube / resume.
  eq('pause status', tube.pause(60)[:status], 'PAUSED')
  ts = tube.stats
  eq('stats-tube pause', ts.pause, 60)
  ok('stats-tube pause_time_left', ts.pause_time_left.between?(58, 60), "pause-time-left #{ts.pause_time_left}")
  tube.pause(0)
  ts = tube.stats
  eq('stats-tube pause after pause(0)', ts.pause, 0)
  eq('stats-tube cmd_pause_tube', ts.cmd_pause_tube, 2)
  raises('pause a missing tube', Beaneater::NotFoundError) { producer.tubes["#{tube_name}-missing"].pause(1) }
  raises('stats of a missing tube', Beaneater::NotFoundError) { producer.tubes["#{tube_name}-missing"].stats }

  # D: put with delay 3, comes by itself.
  d = worker.tubes.reserve(10)
  eq('reserve gets the delayed D', d.id, ids['D'])
  same_body('reserved D body', d.body, jobs['D'][:body])
  waited = now - put_at
  ok('D came after its 3 s delay', waited >= 2.5, format('after %.2f s', waited))
  sj = d.stats
  eq('stats-job D pri', sj.pri, 1)
  eq('stats-job D delay', sj.delay, 3)
  d.delete

  # Nothing left: a reserve with a timeout times out (after about that long).
  t0 = now
  raises('reserve(1) on an empty tube', Beaneater::TimedOutError) { worker.tubes.reserve(1) }
  waited = now - t0
  ok('reserve(1) waited about 1 s', waited >= 0.5 && waited < 3, format('%.2f s', waited))
  eq('peek(:ready) on the emptied tube', tube.peek(:ready), nil)
  eq('peek(:delayed) on the emptied tube', tube.peek(:delayed), nil)
  eq('peek(:buried) on the emptied tube', tube.peek(:buried), nil)

  ts = tube.stats
  eq('final stats-tube total_jobs', ts.total_jobs, 4)
  eq('final stats-tube cmd_delete', ts.cmd_delete, 4)
  %w[urgent ready reserved delayed buried].each do |state|
    eq("final stats-tube current_jobs_#{state}", ts.send("current_jobs_#{state}"), 0)
  end

  # ---- the README's automatic worker: jobs.register + process! ----------------------
  work_name = "#{tube_name}-work"
  work = producer.tubes[work_name]
  %w[ok-1 flaky ok-2].each { |body| work.put(body, pri: 1000) }
  stop_id = work.put('stop', pri: 2000)[:id]
  seen = []
  runner = Beaneater.new("#{HOST}:#{PORT}")
  runner.jobs.register(work_name, retry_on: [RetryMe], max_retries: 2) do |job|
    seen << job.body
    raise RetryMe if job.body == 'flaky' && seen.count('flaky') == 1
    raise Beaneater::AbortProcessingError if job.body == 'stop'
  end
  runner.jobs.process!(release_delay: 0, reserve_timeout: 5)
  eq('process! handled the jobs in priority order, retrying the flaky one',
     seen, %w[ok-1 flaky flaky ok-2 stop])
  eq('process! watches only the registered tube', runner.tubes.watched.map(&:name), [work_name])
  stopped = work.peek(:buried)
  ok('the job that aborted process! is buried', !stopped.nil? && stopped.id == stop_id, stopped.inspect)
  eq('nothing else left in the work tube', work.peek(:ready), nil)
  ws = work.stats
  eq('work tube cmd_delete (3 handled jobs)', ws.cmd_delete, 3)
  eq('work tube total_jobs', ws.total_jobs, 4)
  stopped.delete
  runner.close

  # Z stayed in default, untouched by the worker.
  z_job = producer.jobs.find(z_id)
  ok('the default-tube job is still there', !z_job.nil?)
  same_body('the default-tube job body', z_job.body, 'must stay in default')
  eq('stats-job Z reserves', z_job.stats.reserves, 0)
  z_job.delete

  st = producer.stats
  ok('stats version', st.version.is_a?(String) && st.version =~ /\A1\.\d+/, st.version.inspect)
  ok('stats cmd_put counts our puts', st.cmd_put >= 9, st.cmd_put.to_s)
  ok('stats total_jobs', st.total_jobs >= 9, st.total_jobs.to_s)
  ok('stats current_connections (producer and worker)', st.current_connections >= 2, st.current_connections.to_s)
  ok('stats current_tubes', st.current_tubes >= 2, st.current_tubes.to_s)
  eq('stats max_job_size', st.max_job_size, 65_535)
  eq('stats draining', st.draining, false)
  ok('stats uptime', st.uptime.is_a?(Integer), st.uptime.inspect)
  ok('stats keys include the 1.12 set', (%w[current_jobs_ready cmd_reserve_with_timeout rusage_utime binlog_max_size] - st.keys).empty?, st.keys.inspect)

  worker.close
  producer.close
  puts "OK #{$checks} checks"
end

begin
  scenario
rescue ScenarioFailure => e
  warn "FAIL: #{e.message}"
  exit 1
rescue StandardError => e
  warn "FAIL: unexpected #{e.class}: #{e.message}\n#{e.backtrace.join("\n")}"
  exit 2
end
exit 0
