#!/usr/bin/perl
# Scheduled jobs (SPEC 9): `svc jobs run-due` runs a due job once through the run lifecycle
# (a turn on its session), two racing invocations run it exactly once, missed minutes are
# caught up by one run, a busy session is skipped and retried the next minute, a job whose
# run fails is recorded (exit 1), and GET /api/jobs and `svc jobs list` reflect the last
# run. The clock is SVC_TEST_JOBS_NOW, so the test never waits for a real minute.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp ();
use SvcTest;
use SvcCliTest qw(svc svc_bg svc_wait test_hooks_built);

# the clock knob is a test hook: a build without the hooks (make valgrind's) has no clock
plan skip_all => 'SVC_TEST_JOBS_NOW needs a test build (make TEST_HOOKS=1; make test does)'
    unless test_hooks_built() && SvcTest::test_hooks_built();

my $J = $SvcTest::JSON;
my %server_clock = (SVC_TEST_JOBS_NOW => '2026-11-23T03:00:40Z');
my $s = SvcTest->start(env => \%server_clock, workers => 2, config => <<'YAML');
jobs:
  - id: tick
    schedule: "* * * * *"
    session_id: job-tick
    input: "/slow 150 tick tock tick tock"
  - id: nightly
    schedule: "0 3 * * *"
    session_id: job-night
    input: "nightly report"
  - id: busy
    schedule: "*/5 * * * *"
    session_id: job-busy
    input: "from the job"
  - id: arch
    schedule: "0 12 * * mon-fri"
    session_id: job-arch
    input: "never runs"
  - id: off
    schedule: "* * * * *"
    session_id: job-off
    input: "disabled"
    enabled: false
YAML
my $H = { home => $s->home };

sub run_due_bg { svc_bg($H, { SVC_HOME => $s->home, SVC_TEST_JOBS_NOW => $_[0] }, 'jobs', 'run-due') }
sub run_due {
    my $r = svc_wait(run_due_bg(@_));
    $r->{json} = eval { $J->decode($r->{out}) };
    $r->{by_id} = { map { $_->{id} => $_ } @{ $r->{json}{jobs} // [] } };
    return $r;
}
sub turns { scalar grep { !$_->{torn} } $s->turn_lines($_[0]) }
sub state { $J->decode(SvcTest::read_file($s->home . '/jobs/state.json') // '{}') }
sub api_job {
    my ($id) = @_;
    my ($j) = grep { $_->{id} eq $id } @{ $s->req(GET => '/api/jobs')->{json}{jobs} };
    return $j;
}

# ---- nothing has run: /api/jobs ----
my $j = api_job('tick');
is_deeply [sort keys %$j],
    [sort qw(id schedule session_id enabled next_run_at last_run_at last_status last_run_id)],
    '/api/jobs fields';
is $j->{last_status}, undef, 'no last run yet';
is api_job('nightly')->{next_run_at}, '2026-11-23T03:00:00.000000+00:00',
    'a job due this minute shows this minute';
is api_job('off')->{next_run_at}, undef, 'a disabled job has no next run';

# ---- two racing invocations run a due job exactly once (three rounds) ----
my $rounds = 0;
for my $min (1 .. 3) {
    my $now = sprintf '2026-11-22T10:%02d:20Z', $min;
    my @b = (run_due_bg($now), run_due_bg($now));
    my @r = map { my $x = svc_wait($_); $x->{json} = eval { $J->decode($x->{out}) }; $x } @b;
    my @res = map { my ($t) = grep { $_->{id} eq 'tick' } @{ $_->{json}{jobs} // [] }; $t->{result} // 'none' } @r;
    is scalar(grep { $_ eq 'done' } @res), 1, "minute $min: one invocation ran tick (@res)";
    ok !(grep { $_ ne 'done' && $_ ne 'locked' && $_ ne 'not_due' } @res),
        "minute $min: the other found it locked or already done";
    $rounds++;
    is turns('job-tick'), $rounds, "minute $min: exactly $rounds turn(s) on the job's session";
}
# the same minute again: nothing
my $r = run_due('2026-11-22T10:03:50Z');
is $r->{by_id}{tick}{result}, 'not_due', 'the same minute again: not due';
is $r->{by_id}{off}{result}, 'disabled', 'disabled job left alone';
is $r->{by_id}{nightly}{result}, 'not_due', 'nightly not due at 10:03';
is turns('job-tick'), 3, 'no extra turn';

# ---- a missed stretch is caught up once ----
$r = run_due('2026-11-22T10:30:05Z');
is $r->{by_id}{tick}{result}, 'done', '27 missed minutes: one run';
is turns('job-tick'), 4, 'one turn for the whole gap';
$r = run_due('2026-11-22T10:30:45Z');
is $r->{by_id}{tick}{result}, 'not_due', 'then not due again in that minute';
is turns('job-tick'), 4, 'still 4 turns';

# ---- the turn went through the run lifecycle ----
my @t = $s->turn_lines('job-tick');
is $t[-1]{status}, 'done', 'job turn done';
my $sc = $J->decode(SvcTest::read_file($s->root . '/session_job-tick/svc_session.json'));
is $sc->{channel}, 'job', 'session channel job';
is $sc->{last_run_id}, $r->{json} && $t[-1]{run_id}, 'sidecar last_run_id is the turn';
is $sc->{turn_count}, 4, 'turn_count 4';

# ---- /api/jobs and svc jobs list reflect the last run ----
$j = api_job('tick');
is $j->{last_status}, 'done', '/api/jobs last_status done';
is $j->{last_run_id}, $t[-1]{run_id}, '/api/jobs last_run_id is the last turn';
like $j->{last_run_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/, '/api/jobs last_run_at';
is $j->{next_run_at}, '2026-11-22T10:31:00.000000+00:00', '/api/jobs next_run_at after the last due minute';
my $l = svc($H, { SVC_HOME => $s->home, SVC_TEST_JOBS_NOW => '2026-11-23T03:00:40Z' }, 'jobs', 'list');
is $l->{rc}, 0, 'svc jobs list exit 0';
is_deeply $J->decode($l->{out}), $s->req(GET => '/api/jobs')->{json}, 'svc jobs list shows what /api/jobs shows';
is state()->{schema_version}, 1, 'state.json schema_version';

# ---- a busy session is skipped, then retried the next minute ----
my $busy_before = turns('job-busy');
my $run = $s->req(POST => '/api/chat/runs', body => { session_id => 'job-busy',
    messages => [{ role => 'user', content => '/slow 300 a b c d e f g h i j k l m n' }] });
is $run->{status}, 202, 'a long run holds job-busy';
ok SvcTest::wait_for(10, sub {
    my $x = SvcTest::read_file($s->root . '/session_job-busy/svc_session.json') // '';
    $x =~ /"status": "running"/ }), 'job-busy is running';
$r = run_due('2026-11-22T11:05:10Z');
is $r->{by_id}{busy}{result}, 'skipped', 'busy session: skipped';
is $r->{rc}, 0, 'a skip is not a failure (exit 0)';
is api_job('busy')->{last_status}, 'skipped', '/api/jobs shows skipped';
is state()->{jobs}{busy}{last_error}{code}, 'session_busy', 'state records why';
is $s->wait_run($run->{json}{run_id}, 30)->{json}{status}, 'done', 'the long run ends';
$r = run_due('2026-11-22T11:06:10Z');
is $r->{by_id}{busy}{result}, 'done', 'retried the next minute (though */5 does not match 11:06)';
my @bt = $s->turn_lines('job-busy');
is scalar @bt, $busy_before + 2, 'job-busy: the long run and one job run added';
is $bt[-1]{status}, 'done', 'the retried job run is done';
is $bt[-1]{run_id}, api_job('busy')->{last_run_id}, 'last_run_id of the retried run';
$r = run_due('2026-11-22T11:07:10Z');
is $r->{by_id}{busy}{result}, 'not_due', 'and not again';

# ---- a run that cannot start is an error, recorded; exit 1 ----
is $s->req(POST => '/api/chat', body => { session_id => 'job-arch',
    messages => [{ role => 'user', content => 'hi' }] })->{status}, 200, 'job-arch exists';
is $s->req(POST => '/api/v1/chat/sessions/job-arch/archive')->{status}, 200, 'job-arch archived';
$r = run_due('2026-11-23T12:00:10Z'); # a Monday
is $r->{by_id}{arch}{result}, 'error', 'archived session: error';
is $r->{by_id}{arch}{error}{code}, 'session_archived', 'error code';
is $r->{rc}, 1, 'a failed job run: exit 1';
is api_job('arch')->{last_status}, 'error', '/api/jobs last_status error';
$r = run_due('2026-11-23T12:00:50Z');
is $r->{by_id}{arch}{result}, 'not_due', 'a failed run is not retried within its minute';

# ---- a damaged state file reads as empty, and is replaced ----
SvcTest::write_file($s->home . '/jobs/state.json', '{"torn');
is $s->req(GET => '/api/jobs')->{status}, 200, 'damaged state: /api/jobs still 200';
$r = run_due('2026-11-23T12:05:10Z');
is $r->{rc}, 0, 'run-due with a damaged state: exit 0' or diag $r->{err};
ok eval { state()->{jobs}{tick} }, 'state.json rewritten whole';
$s->stop;

# ---- the shipped systemd units are valid (ExecStart pointed at this build) ----
SKIP: {
    skip 'systemd-analyze not installed', 2 unless -x '/usr/bin/systemd-analyze';
    my $dir = File::Temp::tempdir('svc-units-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    for my $u ('svc-jobs.service', 'svc-jobs.timer') {
        my $t = SvcTest::read_file(SvcTest::repo() . "/nginx/$u");
        $t =~ s{/usr/local/bin/svc\b}{SvcCliTest::svc_bin()}ge;
        SvcTest::write_file("$dir/$u", $t);
    }
    like SvcTest::read_file(SvcTest::repo() . '/nginx/svc-jobs.service'), qr{^ExecStart=\S+/svc jobs run-due$}m,
        'svc-jobs.service runs svc jobs run-due';
    # its Documentation= page, found by man(1) as once installed
    mkdir "$dir/man";
    mkdir "$dir/man/man1";
    SvcTest::write_file("$dir/man/man1/svc.1", SvcTest::read_file(SvcTest::repo() . '/man/svc.1'));
    my $out = `MANPATH='$dir/man:' systemd-analyze verify $dir/svc-jobs.timer $dir/svc-jobs.service 2>&1`;
    is $?, 0, 'systemd-analyze verify accepts svc-jobs.timer and svc-jobs.service' or diag $out;
}
done_testing;
