#!/usr/bin/perl
# Asynchronous runs outlive their worker and the whole pool (SPEC 4.2, 6): the workers are
# killed with SIGKILL right after the 202, and the pool is stopped and a new one started on
# the same home/root in the middle of a run. The run finishes and any worker of any pool
# answers for it.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Time::HiRes qw(time sleep);
use SvcTest;

my $J = JSON::PP->new->utf8->canonical;
my $s = SvcTest->start(workers => 2);

# ---- local helpers ----
sub post_run {
    my ($srv, $sid, $text) = @_;
    return $srv->req(POST => '/api/chat/runs',
                     body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub wait_run { my ($srv, @a) = @_; $srv->wait_run(@a) }
sub events {
    my ($srv, $id, $cursor) = @_;
    return $srv->sse("/api/chat/runs/$id/events?cursor=" . ($cursor // 0), method => 'GET',
                     timeout => 20)->{events};
}
# The worker pids: children of the svc-fcgi master.
sub worker_pids {
    my ($master) = @_;
    my @p;
    if (opendir my $d, '/proc') {
        for my $pid (grep { /^\d+$/ } readdir $d) {
            my $st = SvcTest::read_file("/proc/$pid/stat") // next;
            push @p, $pid if $st =~ /\)\s+\S+\s+(\d+)/ && $1 == $master;
        }
    }
    return sort { $a <=> $b } @p;
}
# The pid of the process with $path open (the run lock, held by the runner).
sub lock_holder {
    my ($path) = @_;
    opendir my $d, '/proc' or return;
    for my $pid (grep { /^\d+$/ } readdir $d) {
        next if $pid == $$;
        opendir my $fd, "/proc/$pid/fd" or next;
        for my $f (grep { /^\d+$/ } readdir $fd) {
            my $l = readlink "/proc/$pid/fd/$f";
            return $pid if defined $l && $l eq $path;
        }
    }
    return;
}
sub pid_alive { my ($pid) = @_; return kill(0, $pid) && (SvcTest::read_file("/proc/$pid/stat") // '') !~ /\)\s+Z/ }
sub check_events {
    my ($ev, $label) = @_;
    my @ev = @$ev;
    ok @ev > 2, "$label: events replayed";
    is_deeply [map { $_->{seq} } @ev], [1 .. scalar @ev], "$label: seq 1..n contiguous";
    is scalar(grep { $_->{type} eq 'done' || $_->{type} eq 'error' } @ev), 1, "$label: one final event";
    is $ev[-1]{type}, 'done', "$label: ends with done";
    return @ev;
}

# ---- the worker that accepted the run is killed ----
my $master = $s->master_pid;
ok $master, 'master pid';
my @workers = worker_pids($master);
is scalar @workers, 2, 'two workers';
my $text = 'one two three four five six seven eight';
my $r = post_run($s, 'k-worker', "/slow 150 $text");
is $r->{status}, 202, 'run accepted';
my $kid = $r->{json}{run_id};
kill 'KILL', $_ for @workers;
ok SvcTest::wait_for(5, sub { !grep { pid_alive($_) } @workers }), 'old workers are gone';
ok SvcTest::wait_for(5, sub { my @n = worker_pids($master); @n == 2 && !grep { my $o = $_; grep { $_ == $o } @workers } @n }),
    'the master respawned its workers';
is $s->req(GET => "/api/chat/runs/$kid")->{json}{status}, 'running', 'run still running after the kill';
$r = wait_run($s, $kid);
is $r->{json}{status}, 'done', 'run finished although its worker was killed';
is $r->{json}{content}, "Echo: $text (I was given 0 earlier messages.)", 'content correct';
check_events(events($s, $kid), 'killed worker');
my $sc = $s->req(GET => '/api/v1/chat/sessions/k-worker')->{json};
is $sc->{status}, 'idle', 'session idle';
is $sc->{turn_count}, 1, 'one turn';
is $sc->{message_count}, 2, 'two messages';

# ---- the whole pool is restarted mid-run ----
my $home = $s->home;
my $root = $s->root;
$text = join ' ', map { "w$_" } 1 .. 16;
$r = post_run($s, 'k-pool', "/slow 150 $text");
is $r->{status}, 202, 'pool: run accepted';
my $pid = $r->{json}{run_id};
SvcTest::wait_for(5, sub { ($s->req(GET => "/api/chat/runs/$pid")->{json}{event_count} // 0) >= 3 });
my $t0 = time;
$s->stop;
ok time - $t0 < 10, 'pool stopped (SIGTERM)';
ok !grep({ pid_alive($_) } $master), 'old master gone';
my $rec = $J->decode(SvcTest::read_file("$root/.svc_runs/$pid.json"));
is $rec->{status}, 'running', 'the run is still running on disk while no pool runs';

my $s2 = SvcTest->start(workers => 2, home => $home);
ok $s2, 'a new pool on the same home';
isnt $s2->master_pid, $master, 'new master';
is $s2->root, $root, 'same root';
$r = $s2->req(GET => "/api/chat/runs/$pid");
is $r->{status}, 200, 'the new pool finds the run';
$r = wait_run($s2, $pid);
is $r->{json}{status}, 'done', 'run finished across the pool restart';
is $r->{json}{content}, "Echo: $text (I was given 0 earlier messages.)", 'content correct';
my @ev = check_events(events($s2, $pid), 'pool restart');
is $r->{json}{event_count}, scalar @ev, 'event_count matches';
is join('', map { $_->{text} } grep { $_->{type} eq 'delta' } @ev), $r->{json}{content},
    'deltas complete';
$sc = $s2->req(GET => '/api/v1/chat/sessions/k-pool')->{json};
is $sc->{status}, 'idle', 'session idle after the restart';
is $sc->{turn_count}, 1, 'one turn';
# the earlier run (killed worker) is still answered by the new pool
is $s2->req(GET => "/api/chat/runs/$kid")->{json}{status}, 'done', 'earlier run found after restart';

# ---- a reader cut by a worker kill resumes from its cursor without loss or repeats ----
$r = post_run($s2, 'k-resume', '/slow 120 r1 r2 r3 r4 r5 r6 r7 r8 r9 r10 r11 r12');
my $rsid = $r->{json}{run_id};
my $m2pid = $s2->master_pid;
my @w = worker_pids($m2pid);
my $killed;
my $first = $s2->sse("/api/chat/runs/$rsid/events?cursor=0", method => 'GET', timeout => 20,
    stop_if => sub {
        my ($ev) = @_;
        if (!$killed && @$ev >= 4) { kill 'KILL', @w; $killed = 1 }
        return 0;
    });
ok $killed, 'workers killed while a reader followed the run';
my @got = grep { ref } @{ $first->{events} };
my $cut = !@got || $got[-1]{type} ne 'done';
ok $cut, 'the reader\'s stream was cut';
my $m2 = $s2->master_pid // 0;
SvcTest::wait_for(5, sub { my @x = worker_pids($m2); @x == 2 });
my $rest = $s2->sse("/api/chat/runs/$rsid/events?cursor=" . scalar(@got), method => 'GET',
                    timeout => 20)->{events};
my @joined = (@got, @$rest);
is_deeply \@joined, events($s2, $rsid), 'cut stream + resumed stream = the full replay';
check_events(\@joined, 'resumed reader');
is wait_run($s2, $rsid)->{json}{status}, 'done', 'the followed run finished';

# ---- a pool started on a different home whose sessions.root points at the same root ----
my $s3 = SvcTest->start(workers => 1, config => "sessions:\n  root: $root\n");
is $s3->root, $root, 'third pool shares the root';
$r = post_run($s2, 'k-shared', '/slow 100 shared root run');
my $sid3 = $r->{json}{run_id};
my $live = $s3->sse("/api/chat/runs/$sid3/events?cursor=0", method => 'GET', timeout => 20)->{events};
check_events($live, 'other pool follows live');
is wait_run($s3, $sid3)->{json}{status}, 'done', 'other pool reports done';
is_deeply $live, events($s2, $sid3), 'both pools replay the same events';
$s3->stop;

# ---- a run whose runner dies is reported as interrupted, and the session is repaired ----
$r = post_run($s2, 'k-runner', '/slow 300 a b c d e f g h i j k l');
my $did = $r->{json}{run_id};
SvcTest::wait_for(5, sub { ($s2->req(GET => "/api/chat/runs/$did")->{json}{event_count} // 0) >= 2 });
my $runner = lock_holder($s2->root . "/.svc_runs/$did.lock");
ok $runner, 'a process holds the run lock';
my @w2 = worker_pids($s2->master_pid);
ok $runner && !grep({ $_ == $runner } @w2, $s2->master_pid), 'the runner is neither a worker nor the master';
{
        is $s2->req(GET => '/api/v1/chat/sessions/k-runner')->{json}{current_run}{pid}, $runner,
        'current_run.pid names the runner';
}
if ($runner) {
    my @fds = map { readlink($_) // '' } glob("/proc/$runner/fd/*");
    ok !(grep { /^socket:/ } @fds), 'the runner holds no socket (no client or FastCGI connection)'
        or diag explain \@fds;
    ok((grep { $_ eq $s2->root . "/.svc_runs/$did.lock" } @fds), 'the runner holds its run lock');
    ok((grep { m{/session_k-runner/\.svc\.run\.lock$} } @fds), 'the runner holds the session run lock');
    my $sess = sub { (split ' ', ((SvcTest::read_file("/proc/$_[0]/stat") // '') =~ /\)\s+(.*)/)[0] // '')[3] };
    isnt $sess->($runner), $sess->($s2->master_pid), 'the runner is in its own session (setsid)';
}
SKIP: {
    skip 'no runner pid', 8 unless $runner && pid_alive($runner);
    kill 'KILL', $runner;
    SvcTest::wait_for(5, sub { !pid_alive($runner) });
    $r = wait_run($s2, $did, 5);
    is $r->{json}{status}, 'error', 'dead runner: status error';
    is $r->{json}{error}{code}, 'interrupted', 'dead runner: interrupted';
    my @de = @{ events($s2, $did) };
    is $de[-1]{type}, 'error', 'dead runner: events end with error';
    is $de[-1]{code}, 'interrupted', 'dead runner: error code interrupted';
    is_deeply [map { $_->{seq} } @de], [1 .. scalar @de], 'dead runner: seq contiguous';
    $sc = $s2->req(GET => '/api/v1/chat/sessions/k-runner')->{json};
    is $sc->{status}, 'error', 'session repaired to error';
    is $sc->{last_error}{code}, 'interrupted', 'session last_error interrupted';
    $r = post_run($s2, 'k-runner', 'after the crash');
    is wait_run($s2, $r->{json}{run_id})->{json}{status}, 'done', 'next run on the session succeeds';
}

$s2->stop;
done_testing;
