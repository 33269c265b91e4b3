#!/usr/bin/perl
# Base endpoints (SPEC 4.4): health, config (redaction), jobs, extensions.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

# SVC_TEST_JOBS_NOW sets the workers' clock in test builds only (make TEST_HOOKS=1)
my %jobs_clock = (SVC_TEST_JOBS_NOW => '2026-01-01T12:00:30Z');
my $clock = SvcTest::test_hooks_built();
my $NEXT_RE = qr/^\d{4}-\d\d-\d\dT03:00:00\.000000\+00:00$/;
# next_run_at: the test clock's exact value, or (no hooks) any 03:00 UTC; replaced by NEXT
sub check_next {
    my ($job, $name) = @_;
    my $next = delete $job->{next_run_at};
    $job->{next_run_at} = 'NEXT';
    return is $next, '2026-01-02T03:00:00.000000+00:00', $name if $clock;
    return like $next // '', $NEXT_RE, "$name (a 03:00 UTC: no test clock in this build)";
}
my $s = SvcTest->start(env => \%jobs_clock, workers => 2, config => <<'YAML');
server:
  api_token: ""
model:
  api_key: "sk-secret-model-key-123"
jobs:
  - id: nightly
    schedule: "0 3 * * *"
    session_id: job-nightly
    input: "summarize"
    enabled: true
  - id: paused
    schedule: "*/5 * * * *"
    session_id: job-paused
    input: "ping"
    enabled: false
extensions:
  - name: weather
    kind: tool
    description: "Weather for a city"
    parameters: {"type": "object", "properties": {"city": {"type": "string"}}}
    command: ["/bin/echo", "secret-cmd-arg"]
    timeout_s: 5
    enabled: true
YAML

# health
my $r = $s->req(GET => '/api/health');
is $r->{status}, 200, 'health 200';
like $r->{headers}{'content-type'}, qr{^application/json; charset=utf-8}, 'json content type';
ok $r->{headers}{'x-request-id'}, 'X-Request-Id on health';
my $h = $r->{json};
is $h->{status}, 'ok', 'status ok';
like $h->{version}, qr/^\d+\.\d+\.\d+/, 'version';
like $h->{pid}, qr/^\d+$/, 'pid';
ok defined $h->{uptime_s} && $h->{uptime_s} >= 0, 'uptime_s';
my $fs = delete $h->{sessions}{filesystem};
like $fs, qr/^[a-z0-9]+$/, 'sessions.filesystem names the kind of the root';
is_deeply $h->{sessions}, { enabled => JSON::PP::true, provider => 'svc_repository',
                            root_writable => JSON::PP::true,
                            shared => ($fs =~ /^(fuse|nfs|ceph|cifs|smb2|9p)$/ ? JSON::PP::true : JSON::PP::false) },
    'sessions block (shared: the root is on a local disk here)';
is_deeply $h->{model}, { provider => 'echo', name => 'echo-1' }, 'model block';

# config: effective, redacted
$r = $s->req(GET => '/api/config');
is $r->{status}, 200, 'config 200';
unlike $r->{body}, qr/sk-secret-model-key-123/, 'model api key never shown';
is $r->{json}{model}{api_key}, '***', 'set secret shown as ***';
is $r->{json}{server}{api_token}, '', 'unset secret shown as ""';
is $r->{json}{source}, $s->home . '/agents.yaml', 'source is the file read';
is $r->{json}{server}{max_body_bytes}, 1048576, 'defaults applied';
unlike $r->{body}, qr/secret-cmd-arg/, 'extension command not in config dump';

# jobs
$r = $s->req(GET => '/api/jobs');
is $r->{status}, 200, 'jobs 200';
check_next($r->{json}{jobs}[0], 'jobs: next_run_at after the clock');
is_deeply $r->{json}, { jobs => [
    { id => 'nightly', schedule => '0 3 * * *', session_id => 'job-nightly',
      enabled => JSON::PP::true, next_run_at => 'NEXT', last_run_at => undef,
      last_status => undef, last_run_id => undef },
    { id => 'paused', schedule => '*/5 * * * *', session_id => 'job-paused',
      enabled => JSON::PP::false, next_run_at => undef, last_run_at => undef,
      last_status => undef, last_run_id => undef } ] }, 'jobs from config';

# job state file, when present
mkdir $s->home . '/jobs';
SvcTest::write_file($s->home . '/jobs/state.json',
    '{"nightly": {"last_run_at": "2026-01-01T03:00:00.000000+00:00", "last_status": "done", "last_run_id": "run-1"}}');
$r = $s->req(GET => '/api/jobs');
is $r->{json}{jobs}[0]{last_status}, 'done', 'state file read';
is $r->{json}{jobs}[0]{last_run_id}, 'run-1', 'state: last_run_id';
is $r->{json}{jobs}[1]{last_status}, undef, 'other job without state';
check_next($r->{json}{jobs}[0], 'next_run_at: the next 03:00 UTC after the (test) clock');

# extensions
$r = $s->req(GET => '/api/extensions');
is $r->{status}, 200, 'extensions 200';
my $x = $r->{json}{extensions};
is scalar @$x, 2, 'clock + one extension';
is_deeply $x->[0], { name => 'clock', kind => 'tool', description => 'Current UTC time',
                     parameters => { type => 'object', properties => {} },
                     enabled => JSON::PP::true, builtin => JSON::PP::true }, 'clock first';
is $x->[1]{name}, 'weather', 'configured extension';
is $x->[1]{builtin}, JSON::PP::false, 'not builtin';
is $x->[1]{parameters}{properties}{city}{type}, 'string', 'parameters shown';
ok !exists $x->[1]{command}, 'command never shown';
unlike $r->{body}, qr/secret-cmd-arg/, 'command args not in body';

$s->stop;

# health 503 degraded: the root cannot be created (a regular file is in its path)
my $home = SvcTest->make_home('');
SvcTest::write_file("$home/afile", "x");
SvcTest::write_file("$home/agents.yaml", "sessions:\n  fsync: false\n  root: $home/afile/sessions\n");
my $d = SvcTest->start(home => $home);
$r = $d->req(GET => '/api/health');
is $r->{status}, 503, 'health 503 when root not writable';
is $r->{json}{status}, 'degraded', 'status degraded';
ok $r->{json}{reason}, 'with a reason';
is $r->{json}{sessions}{root_writable}, JSON::PP::false, 'root_writable false';
$d->stop;

# a root that does not exist yet but can be created is fine
$home = SvcTest->make_home('');
SvcTest::write_file("$home/agents.yaml", "sessions:\n  fsync: false\n  root: $home/not/yet/there\n");
$d = SvcTest->start(home => $home);
$r = $d->req(GET => '/api/health');
is $r->{status}, 200, 'creatable root is ok';
ok !-e "$home/not", 'health does not create the root';
$d->stop;

done_testing;
