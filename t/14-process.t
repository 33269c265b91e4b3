#!/usr/bin/perl
# Process model (SPEC 6): SIGHUP reload (valid and invalid), respawn of dead workers,
# max_requests, SIGTERM letting in-flight requests finish.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);
use SvcTest;

my $s = SvcTest->start(config => "server:\n  workers: 2\n", workers => 2);
my $master = $s->master_pid;
like $master, qr/^\d+$/, 'master pid from health';
like $s->log, qr/master started: 2 workers/, 'master start logged';

# SIGHUP with a broken config: refused, old workers go on
my $yaml = $s->home . '/agents.yaml';
my $good = SvcTest::read_file($yaml);
SvcTest::write_file($yaml, "server:\n  workers: [1, 2\nmodel: {\n");
kill 'HUP', $master;
ok SvcTest::wait_for(10, sub { $s->log =~ /reload refused/ }), 'broken config refused (logged)';
for (1 .. 4) {
    is $s->req(GET => '/api/health')->{status}, 200, 'still serving after a refused reload';
}
is $s->master_pid, $master, 'same master';

# SIGHUP with an invalid value: refused too
SvcTest::write_file($yaml, "sessions:\n  fsync: false\nserver:\n  workers: 100000\n");
kill 'HUP', $master;
ok SvcTest::wait_for(10, sub { () = $s->log =~ /reload refused/g; @{[ $s->log =~ /reload refused/g ]} >= 2 }),
    'out-of-range config refused';
is $s->req(GET => '/api/health')->{json}{model}{name}, 'echo-1', 'old config still in force';

# SIGHUP with a valid config: workers replaced gracefully, new config in force
SvcTest::write_file($yaml, $good . "model:\n  name: echo-reloaded\n");
kill 'HUP', $master;
ok SvcTest::wait_for(10, sub {
    my @names = map { $s->req(GET => '/api/health')->{json}{model}{name} // '' } 1 .. 4;
    !grep { $_ ne 'echo-reloaded' } @names;
}), 'valid config reloaded: every worker answers with the new one';
like $s->log, qr/reloaded configuration/, 'reload logged';

# a killed worker is replaced
my $w = $s->req(GET => '/api/health')->{json}{worker_pid};
ok kill('KILL', $w), "killed worker $w";
ok SvcTest::wait_for(10, sub {
    my @p = map { $s->req(GET => '/api/health')->{json}{worker_pid} // 0 } 1 .. 4;
    !grep { $_ == $w } @p;
}), 'dead worker no longer answers';
my %pids;
for (1 .. 20) {
    my $r = $s->req(GET => '/api/health');
    is $r->{status}, 200, 'served after a worker died' if $_ <= 3;
    $pids{ $r->{json}{worker_pid} }++;
}
ok scalar(keys %pids) >= 1, 'workers answering: ' . join(',', keys %pids);
like $s->log, qr/worker $w killed by signal 9/, 'death logged';

# SIGTERM to the master during a slow request: it finishes, then everything stops
my $res_file = $s->home . '/slow.json';
my $kid = fork // die;
if ($kid == 0) {
    my $r = $s->req(POST => '/api/chat', body => { session_id => 'slow-1',
        messages => [{ role => 'user', content => '/slow 400 one two three four' }] });
    SvcTest::write_file($res_file, $SvcTest::JSON->encode({ status => $r->{status}, json => $r->{json} }));
    POSIX::_exit(0);
}
my $sc = $s->root . '/session_slow-1/svc_session.json';
ok SvcTest::wait_for(10, sub { (SvcTest::read_file($sc) // '') =~ /"status": "running"/ }),
    'slow request in flight';
my $t0 = time;
kill 'TERM', $master;
waitpid($kid, 0);
my $res = $SvcTest::JSON->decode(SvcTest::read_file($res_file) // '{}');
is $res->{status}, 200, 'in-flight request finished after SIGTERM';
like $res->{json}{content} // '', qr/one two three four/, 'with its full answer';
ok SvcTest::wait_for(10, sub { !kill 0, $master }), 'master exited after the request';
like $s->log, qr/stop: signal 15/, 'stop logged';
$s->stop;
like SvcTest::read_file($sc), qr/"status": "idle"/, 'the run ended normally (idle)';

# max_requests: a worker exits after N requests and is replaced
$s = SvcTest->start(config => "server:\n  workers: 1\n  max_requests: 3\n", workers => 1);
my %seen;
for (1 .. 10) {
    my $r = $s->req(GET => '/api/health');
    is $r->{status}, 200, "request $_ ok across worker replacement";
    $seen{ $r->{json}{worker_pid} }++;
}
ok keys(%seen) >= 3, 'workers replaced after max_requests (' . scalar(keys %seen) . ' pids)';
ok !(grep { $_ > 3 } values %seen), 'no worker served more than 3';
# the whole stack stops cleanly during a slow stream: serve's TERM is graceful
$kid = fork // die;
if ($kid == 0) {
    my $sse = $s->sse('/api/chat', body => { stream => JSON::PP::true, session_id => 'slow-2',
        messages => [{ role => 'user', content => '/slow 300 a b c' }] });
    SvcTest::write_file($res_file, $SvcTest::JSON->encode({ status => $sse->{status},
        last => $sse->{events}[-1] }));
    POSIX::_exit(0);
}
$sc = $s->root . '/session_slow-2/svc_session.json';
ok SvcTest::wait_for(10, sub { (SvcTest::read_file($sc) // '') =~ /"status": "running"/ }),
    'stream in flight';
$s->stop;
waitpid($kid, 0);
$res = $SvcTest::JSON->decode(SvcTest::read_file($res_file) // '{}');
is $res->{status}, 200, 'stream completed while the stack stopped';
is $res->{last}, '[DONE]', 'stream ended with [DONE]';
my $left = `ps -eo pid,args | grep -F '$s->{home}' | grep -v grep`;
is $left, '', 'no process left behind';

done_testing;
