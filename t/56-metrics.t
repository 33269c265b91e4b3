#!/usr/bin/perl
# GET /api/metrics (issue 23 item 10): the Prometheus text format, read by a strict parser of
# the exposition format; counters of the whole pool whichever worker answers; runs by status;
# the shipped nginx snippet answers it from 127.0.0.1 only; the token is asked for when set.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use SvcTest;

# The text format (version 0.0.4): "# HELP name text", "# TYPE name type" before the first
# sample of a family, samples `name{label="value",...} number`; histograms with cumulative
# _bucket{le=...} series ending at le="+Inf" equal to _count. Dies on anything else.
sub parse_prom {
    my ($text) = @_;
    my (%type, %samples, %seen_family);
    my $name_re = qr/[a-zA-Z_:][a-zA-Z0-9_:]*/;
    for my $line (split /\n/, $text) {
        next if $line eq '';
        if ($line =~ /^# HELP ($name_re) (.*)$/) { next }
        if ($line =~ /^# TYPE ($name_re) (counter|gauge|histogram|summary|untyped)$/) {
            die "TYPE $1 twice\n" if $type{$1}++ && 0;
            $type{$1} = $2;
            next;
        }
        die "comment line not HELP or TYPE: $line\n" if $line =~ /^#/;
        $line =~ /^($name_re)(?:\{(.*)\})? (\S+)$/ or die "bad sample line: $line\n";
        my ($name, $labels, $value) = ($1, $2 // '', $3);
        $value =~ /^(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?Inf|NaN)$/
            or die "bad value in: $line\n";
        my %l;
        while (length $labels) {
            $labels =~ s/^($name_re)="((?:[^"\\]|\\.)*)"(,|$)// or die "bad labels in: $line\n";
            $l{$1} = $2;
        }
        (my $family = $name) =~ s/_(bucket|sum|count)$//;
        $family = $name unless $type{$family};
        die "sample before its TYPE: $line\n" unless $type{$family};
        push @{ $samples{$family} }, { name => $name, labels => \%l, value => $value };
    }
    for my $f (grep { $type{$_} eq 'histogram' } keys %samples) {
        my %series;
        for my $s (@{ $samples{$f} }) {
            my %k = %{ $s->{labels} };
            my $le = delete $k{le};
            my $key = join ',', map {"$_=$k{$_}"} sort keys %k;
            push @{ $series{$key}{buckets} }, [ $le, $s->{value} ] if $s->{name} eq "${f}_bucket";
            $series{$key}{count} = $s->{value} if $s->{name} eq "${f}_count";
        }
        for my $key (keys %series) {
            my @b = @{ $series{$key}{buckets} || [] };
            die "$f\{$key}: no +Inf bucket\n" unless @b && $b[-1][0] eq '+Inf';
            for my $i (1 .. $#b) {
                die "$f\{$key}: buckets not cumulative\n" if $b[$i][1] < $b[ $i - 1 ][1];
            }
            die "$f\{$key}: +Inf bucket is not _count\n"
                unless defined $series{$key}{count} && $series{$key}{count} == $b[-1][1];
        }
    }
    return (\%type, \%samples);
}

# The sum of the samples named $name (a family, or a histogram's NAME_count) with labels %want.
sub value_of {
    my ($samples, $name, %want) = @_;
    my $family = $name;
    $family =~ s/_count$// unless $samples->{$name};
    my $sum = 0;
  S: for my $s (@{ $samples->{$family} || [] }) {
        next if $s->{name} ne $name;
        for (keys %want) { next S unless ($s->{labels}{$_} // '') eq $want{$_} }
        $sum += $s->{value};
    }
    return $sum;
}

my $s = SvcTest->start(workers => 3, config => "server:\n  api_token: \"\"\n");

# traffic: health, turns, a 404 and a 422 (scripts/serve's own health checks come before)
my (undef, $before) = parse_prom($s->req(GET => '/api/metrics')->{body});
my $health0 = value_of($before, 'svc_http_requests_total', route => '/api/health');
$s->req(GET => '/api/health') for 1 .. 5;
for my $i (1 .. 4) {
    my $r = $s->req(POST => '/api/chat', body => { session_id => "m$i", message => "hello $i" });
    is $r->{status}, 200, "turn $i";
}
is $s->req(GET => '/api/v1/chat/sessions/nope')->{status}, 404, 'a missing session';
is $s->req(POST => '/api/chat', body => { session_id => 'm1' })->{status}, 422, 'a turn without input';

my $r = $s->req(GET => '/api/metrics');
is $r->{status}, 200, 'metrics 200';
like $r->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4}, 'the text format content type';
my ($type, $samples) = eval { parse_prom($r->{body}) };
ok $type, 'the exposition parses' or diag $@;
$type ||= {};
is $type->{$_}, 'counter', "$_ is a counter"
    for qw(svc_http_requests_total svc_runs_total svc_model_errors_total svc_index_rebuilds_total);
is $type->{$_}, 'histogram', "$_ is a histogram"
    for qw(svc_http_request_duration_seconds svc_run_duration_seconds
           svc_model_request_duration_seconds svc_lock_wait_seconds);
is $type->{$_}, 'gauge', "$_ is a gauge" for qw(svc_sessions svc_workers svc_turns_per_minute);

# the pool's counts, whichever of the 3 workers served each request
is value_of($samples, 'svc_http_requests_total', route => '/api/health', status => '200'),
    $health0 + 5,
    'five health requests counted across workers';
is value_of($samples, 'svc_http_requests_total', route => '/api/chat', status => '200'), 4,
    'four turns';
is value_of($samples, 'svc_http_requests_total', route => '/api/chat', status => '422'), 1,
    'the refused turn by its status';
is value_of($samples, 'svc_http_requests_total', route => '/api/v1/chat/sessions/{session_id}',
            status => '404'), 1, 'the 404 under its route pattern, not the id';
is value_of($samples, 'svc_runs_total', status => 'done'), 4, 'runs done';
is value_of($samples, 'svc_run_duration_seconds_count'), 4, 'run durations counted';
is value_of($samples, 'svc_model_request_duration_seconds_count'), 4, 'model calls counted';
is value_of($samples, 'svc_sessions'), 4, 'sessions from the index';
is value_of($samples, 'svc_workers'), 3, 'workers';
is value_of($samples, 'svc_turns_per_minute', minutes_ago => '0') +
   value_of($samples, 'svc_turns_per_minute', minutes_ago => '1'), 4, 'turns in the last minutes';
unlike $r->{body}, qr/m1|hello/, 'no session id or text in the metrics';

# a model failure: counted by code, and as an error run
my $bad = SvcTest->start(config => <<'YAML');
server:
  api_token: "metrics-token-xyz"
model:
  provider: openai
  base_url: "http://127.0.0.1:9/v1"
  max_retries: 0
  timeout_s: 5
YAML
my $auth = { authorization => 'Bearer metrics-token-xyz' };
$r = $bad->req(POST => '/api/chat', headers => $auth, body => { session_id => 'x', message => 'hi' });
ok $r->{status} >= 500, 'a turn against a dead model server fails';
is $bad->req(GET => '/api/metrics')->{status}, 401, 'the bearer token is asked for';
$r = $bad->req(GET => '/api/metrics', headers => $auth);
($type, $samples) = parse_prom($r->{body});
is value_of($samples, 'svc_runs_total', status => 'error'), 1, 'the failed run';
is value_of($samples, 'svc_model_errors_total', code => 'upstream_error'), 1,
    'the model error by its code';
is value_of($samples, 'svc_run_errors_per_minute', minutes_ago => '0') +
   value_of($samples, 'svc_run_errors_per_minute', minutes_ago => '1'), 1, 'errors a minute';
unlike $r->{body} . $bad->log, qr/metrics-token-xyz/, 'the token in neither metrics nor log';
$bad->stop;

# nginx answers /api/metrics from 127.0.0.1 only (svc.conf): another loopback source is refused
sub get_from {
    my ($local) = @_;
    my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $s->port,
                                  LocalAddr => $local, Proto => 'tcp', Timeout => 5)
        or return "connect: $!";
    print $c "GET /api/metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
    local $/;
    my $resp = <$c> // '';
    return $resp =~ m{^HTTP/1\.\d (\d+)} ? $1 : "no answer";
}
is get_from('127.0.0.1'), 200, 'metrics from 127.0.0.1';
is get_from('127.0.0.2'), 403, 'metrics refused from another address';
my $h = $s->req(GET => '/api/health');
is $h->{status}, 200, 'health is still for everyone';

$s->stop;
done_testing;
