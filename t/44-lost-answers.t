#!/usr/bin/perl
# Runs whose answer is lost (SPEC 2.3, 4.2):
# - a worker killed after it started a detached run but before it answered leaves the client
#   with a 502 while the run goes on to `done`; the client's retry with the same
#   Idempotency-Key gets that same run (not a second one, not 409), during and after it;
# - a worker killed in the middle of a synchronous run leaves its session `running`; the
#   pool's master repairs it when it reaps the worker, with no reader asking.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 2, env => { SVC_TEST_KILL_AFTER_SPAWN => 'lost-' });
my $root = $s->root;
my $J = JSON::PP->new->utf8->canonical;

sub post_run {
    my ($sid, $text, $key) = @_;
    return $s->req(POST => '/api/chat/runs', headers => { 'idempotency-key' => $key },
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub records_of {
    my ($sid) = @_;
    my @r;
    for my $f (glob "$root/.svc_runs/run-*.json") {
        my $rec = eval { $J->decode(SvcTest::read_file($f)) } or next;
        push @r, $rec if $rec->{session_id} eq $sid;
    }
    return @r;
}
sub sidecar { my $t = SvcTest::read_file("$root/session_$_[0]/svc_session.json"); $t ? $J->decode($t) : undef }

# ---- the answer to POST /api/chat/runs is lost ----
my $text = 'one two three four five six';
my $r = post_run('lost-1', "/slow 100 $text", 'key-A');
is $r->{status}, 502, 'the worker died before answering: the client sees a 502';
my @recs = records_of('lost-1');
is scalar @recs, 1, 'yet one run was started';
my $id = $recs[0]{run_id};

$r = post_run('lost-1', "/slow 100 $text", 'key-A');
is $r->{status}, 202, 'the retry with the same key: 202';
is $r->{json}{run_id}, $id, 'the retry gets that same run';
is $r->{headers}{'idempotent-replayed'}, 'true', 'Idempotent-Replayed: true';
$r = $s->wait_run($id, 30);
is $r->{json}{status}, 'done', 'the run went on to done';
like $r->{json}{content}, qr/\Q$text\E/, 'its answer is there';
$r = post_run('lost-1', "/slow 100 $text", 'key-A');
is $r->{json}{run_id}, $id, 'a retry after it finished: still that run';
is $r->{json}{status}, 'done', '... reported done';
is scalar(records_of('lost-1')), 1, 'one run in all';
my @turns = $s->turn_lines('lost-1');
is scalar @turns, 1, 'one turn on the session';
is sidecar('lost-1')->{run_count}, 1, 'run_count 1';

# a different key is a different request: it waits for the session like any run
$r = post_run('other', 'hello', 'key-B');
is $r->{status}, 202, 'a session without the test hook answers normally';

# ---- a worker dies in the middle of a synchronous run: the master repairs ----
my $master = $s->master_pid;
my @workers = grep { (SvcTest::read_file("/proc/$_/stat") // '') =~ /\)\s+\S+\s+(\d+)/ && $1 == $master }
    grep { /^\d+$/ } do { opendir my $d, '/proc'; readdir $d };
is scalar @workers, 2, 'two workers';
my $pid = fork // die;
if (!$pid) {
    $s->{pid} = undef;    # the child must not stop the server on exit
    $s->req(POST => '/api/chat', body => { session_id => 'held',
        messages => [{ role => 'user', content => '/slow 300 a b c d e f g h i j k l m n o p' }] });
    POSIX::_exit(0);
}
ok SvcTest::wait_for(20, sub { my $sc = sidecar('held'); $sc && $sc->{status} eq 'running' }),
    'the synchronous run is running';
kill 'KILL', @workers;
waitpid $pid, 0;
# nobody reads the session through the service: only the files are looked at
ok SvcTest::wait_for(20, sub { sidecar('held')->{status} ne 'running' }), 'the session left running without a reader';
my $sc = sidecar('held');
is $sc->{status}, 'error', 'status error';
is $sc->{last_error}{code}, 'interrupted', 'last_error interrupted';
is $sc->{current_run}, undef, 'no current run';
my @t = $s->turn_lines('held');
is $t[-1]{error}{code}, 'interrupted', 'an interrupted turn line';
# the master writes the sidecar first and its log line after: wait for the line
ok SvcTest::wait_for(10, sub { $s->log =~ /died during a run on session held: repaired it/ }),
    'the master says so';
$r = $s->req(POST => '/api/chat', body => { session_id => 'held', messages => [{ role => 'user', content => 'again' }] });
is $r->{status}, 200, 'the session takes the next run';
$s->stop;

# ---- a worker dies inside the run's start, after the sidecar says `running` (a new
# session: its session.json is written next): the master knows the session all the same ----
my $c = SvcTest->start(workers => 1, env => { SVC_TEST_CRASH_BEFORE_RENAME => '/session.json' });
my $sc_path = $c->root . '/session_born/svc_session.json';
$r = $c->req(POST => '/api/chat', body => { session_id => 'born', messages => [{ role => 'user', content => 'hi' }] });
isnt $r->{status}, 200, 'the worker died writing the new session\'s session.json';
ok !-e $c->root . '/session_born/session.json', 'no session.json: it died before the rename';
ok SvcTest::wait_for(20, sub { ((SvcTest::read_file($sc_path) // '') =~ /"status": "(\w+)"/)[0] eq 'error' }),
    'the master repaired the session, no reader asking' or diag SvcTest::read_file($sc_path), $c->log;
# the master writes the sidecar first and its log line after: wait for the line
ok SvcTest::wait_for(10, sub { $c->log =~ /died during a run on session born: repaired it/ }),
    'and says so' or diag $c->log;
$c->stop;
done_testing();
