#!/usr/bin/perl
# Metrics that ops tools accept (SPEC 18, issue 41): `promtool check metrics` (Debian's
# prometheus package) passes on GET /api/metrics, fresh, after refused requests and a failed
# model call, and after turns; and a real Prometheus, started here on loopback,
# scrapes svc through the shipped nginx snippet with the bearer token (as docs/OPS.md's
# scrape job does) and answers series back through its own query API.
use strict;
use warnings;
use lib 't/lib';
use File::Temp qw(tempdir);
use HTTP::Tiny;
use JSON::PP;
use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(time sleep);
use SvcTest;

for my $tool (qw(promtool prometheus)) {
    next if `command -v $tool 2>/dev/null`;
    BAIL_OUT("$tool is missing (scripts/install-deps installs prometheus)");
}
my $token = 'prom-token-1234';
my $auth = { authorization => "Bearer $token" };

# promtool over the exposition text; returns its output (empty when it has nothing to say)
sub promtool {
    my ($text, $name) = @_;
    my $dir = tempdir(CLEANUP => 1);
    SvcTest::write_file("$dir/m.txt", $text);
    my $out = `promtool check metrics < '$dir/m.txt' 2>&1`;
    is $? >> 8, 0, "promtool check metrics: $name" or diag $out;
    is $out, '', 'without a complaint' or diag $out;
}

# a model server nobody answers on, for svc_model_errors_total
my $s = SvcTest->start(workers => 2, config => <<"YAML");
server:
  api_token: $token
model:
  provider: openai
  base_url: http://127.0.0.1:9/v1
  max_retries: 0
  timeout_s: 5
YAML
my $m = $s->req(GET => '/api/metrics', headers => $auth);
is $m->{status}, 200, 'GET /api/metrics';
promtool($m->{body}, 'a fresh pool');

# traffic of every kind the exposition counts
my $r = $s->req(POST => '/api/chat', headers => $auth, body => { session_id => 'p1', message => 'hi' });
ok $r->{status} >= 500, 'a turn against a dead model server fails (a model error)';
is $s->req(GET => '/api/v1/chat/sessions/nope', headers => $auth)->{status}, 404, 'a 404';
is $s->req(DELETE => '/api/health', headers => $auth)->{status}, 405, 'a 405';
is $s->req(GET => '/api/nowhere', headers => $auth)->{status}, 404, 'no route';
$m = $s->req(GET => '/api/metrics', headers => $auth);
promtool($m->{body}, 'after errors');
like $m->{body}, qr/^svc_model_errors_total\{code="upstream_error"\} 1$/m, 'the model error is there';
$s->stop;

# the echo model: turns that succeed; then Prometheus scrapes
$s = SvcTest->start(workers => 2, config => "server:\n  api_token: $token\n");
for my $i (1 .. 3) {
    is $s->req(POST => '/api/chat', headers => $auth,
               body => { session_id => "p$i", message => "hello $i" })->{status}, 200, "turn $i";
}
$m = $s->req(GET => '/api/metrics', headers => $auth);
promtool($m->{body}, 'after turns');

my $dir = tempdir('svc-prom-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $pport = SvcTest::free_port();
SvcTest::write_file("$dir/token", $token);
SvcTest::write_file("$dir/prometheus.yml", <<"YAML");
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: svc
    metrics_path: /api/metrics
    authorization:
      credentials_file: $dir/token
    static_configs:
      - targets: ["127.0.0.1:@{[ $s->port ]}"]
YAML
my $pid = fork // die "fork: $!";
if (!$pid) {
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', "$dir/prometheus.log";
    open STDERR, '>&', \*STDOUT;
    exec 'prometheus', "--config.file=$dir/prometheus.yml", "--storage.tsdb.path=$dir/data",
        "--web.listen-address=127.0.0.1:$pport", '--log.level=warn' or POSIX::_exit(127);
}
my $http = HTTP::Tiny->new(timeout => 5);
sub query {
    my ($q) = @_;
    my $res = $http->get("http://127.0.0.1:$pport/api/v1/query?query=" . uri($q));
    my $j = eval { decode_json($res->{content}) } // {};
    return ($j->{status} // '') eq 'success' ? $j->{data}{result} : undef;
}
sub uri { my ($t) = @_; $t =~ s/([^A-Za-z0-9_.~-])/sprintf('%%%02X', ord $1)/ge; $t }
my $t0 = time;
my $up = SvcTest::wait_for(60, sub {
    die "prometheus exited:\n" . (SvcTest::read_file("$dir/prometheus.log") // '')
        if waitpid($pid, WNOHANG) == $pid;
    my $res = query('up{job="svc"}');
    $res && @$res && $res->[0]{value}[1] eq '1';
});
ok $up, 'Prometheus scrapes svc: up{job="svc"} is 1'
    or diag((SvcTest::read_file("$dir/prometheus.log") // '') . "\n"
            . ($http->get("http://127.0.0.1:$pport/api/v1/targets")->{content} // ''));
note sprintf 'first successful scrape after %.1f s', time - $t0;
my $turns = SvcTest::wait_for(10, sub {
    my $res = query('sum(svc_http_requests_total{route="/api/chat",status="200"})');
    $res && @$res && $res->[0]{value}[1] >= 3 ? $res : undef;
});
ok $turns, 'its query API answers svc_http_requests_total of the three turns'
    or diag explain query('svc_http_requests_total');
my $workers = query('svc_workers');
is $workers && $workers->[0]{value}[1], '2', 'svc_workers{job="svc"} is 2';
my $hist = query('svc_run_duration_seconds_count');
ok $hist && $hist->[0]{value}[1] >= 3, 'a histogram\'s _count';
my $fails = query('scrape_samples_scraped{job="svc"}');
ok $fails && $fails->[0]{value}[1] > 50, 'every sample of the scrape taken';

kill 'TERM', $pid;
my $deadline = time + 20;
sleep 0.1 while waitpid($pid, WNOHANG) == 0 && time < $deadline;
if (kill 0, $pid) { kill 'KILL', $pid; waitpid $pid, 0 }
done_testing;
