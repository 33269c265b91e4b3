#!/usr/bin/perl
# svc-fcgi without scripts/serve: plain CGI (one request from the environment and stdin),
# and FastCGI on a socket handed over on fd 0 (spawn-fcgi), driven with cgi-fcgi.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp qw(tempdir);
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);
use SvcTest;

my $bin = SvcTest::fcgi_bin();
plan skip_all => "$bin not built" unless -x $bin;
my $J = $SvcTest::JSON;

# Run a command with extra env and stdin; returns (stdout, stderr).
sub run_with {
    my ($env, $stdin, @cmd) = @_;
    my $dir = tempdir(CLEANUP => 1);
    SvcTest::write_file("$dir/in", $stdin // '');
    my $pid = fork // die;
    if ($pid == 0) {
        delete @ENV{grep { /^(REQUEST_|CONTENT_|QUERY_|PATH_INFO|SCRIPT_NAME|HTTP_|GATEWAY_|LISTEN_|SVC_)/ } keys %ENV};
        $ENV{$_} = $env->{$_} for keys %$env;
        open STDIN, '<', "$dir/in";
        open STDOUT, '>', "$dir/out";
        open STDERR, '>', "$dir/err";
        exec @cmd or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    return (SvcTest::read_file("$dir/out"), SvcTest::read_file("$dir/err"), $? >> 8);
}

# Split a CGI response into (status, {headers}, body).
sub parse_cgi {
    my ($out) = @_;
    my ($head, $body) = split /\r?\n\r?\n/, $out, 2;
    my %h;
    for (split /\r?\n/, $head // '') {
        $h{lc $1} = $2 if /^([^:]+):\s*(.*)$/;
    }
    my ($status) = ($h{status} // '') =~ /^(\d+)/;
    return ($status, \%h, $body);
}

my $home = SvcTest->make_home('');
my %base = (SVC_HOME => $home, GATEWAY_INTERFACE => 'CGI/1.1');

# --- plain CGI ---
my ($out, $err, $rc) = run_with({ %base, REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health',
                                  HTTP_X_REQUEST_ID => 'cgi-1' }, '', $bin);
is $rc, 0, 'CGI: exits 0 after one request';
my ($st, $h, $body) = parse_cgi($out);
is $st, 200, 'CGI: Status: 200';
like $h->{'content-type'}, qr{^application/json}, 'CGI: content type';
is $h->{'x-request-id'}, 'cgi-1', 'CGI: X-Request-Id echoed';
is $J->decode($body)->{status}, 'ok', 'CGI: health body';
like $err, qr{GET /api/health 200 .*rid=cgi-1}, 'CGI: log line on stderr';
# a query parameter the route does not read is refused, named (it was ignored)
($out, $err) = run_with({ %base, REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health?verbose=1',
                          QUERY_STRING => 'verbose=1' }, '', $bin);
($st, $h, $body) = parse_cgi($out);
is $st, 400, 'CGI: an unknown query parameter: 400';
my $qe = eval { $J->decode($body)->{error} } // {};
is_deeply [$qe->{code}, $qe->{param}], ['invalid_query', 'verbose'], '  invalid_query naming it'
    or diag $body;
like $err, qr{GET /api/health 400 }, '  its log line, the path without the query';
unlike $err, qr{verbose}, '  (the query is not logged)';

# a relative SVC_HOME not made yet: its first write would make it, so health is ok
{
    require Cwd;
    my $was = Cwd::getcwd();
    my $cwd = tempdir(CLEANUP => 1);
    chdir $cwd or die;
    my ($o) = run_with({ GATEWAY_INTERFACE => 'CGI/1.1', SVC_HOME => 'relhome',
                         REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' }, '', $bin);
    chdir $was or die;
    my ($s2, undef, $b2) = parse_cgi($o // '');
    is $s2, 200, 'CGI: health with a relative SVC_HOME not made yet: 200';
    is eval { $J->decode($b2)->{status} }, 'ok', '  status ok' or diag $b2;
}

# SCRIPT_NAME + PATH_INFO instead of REQUEST_URI
($out) = run_with({ %base, REQUEST_METHOD => 'GET', SCRIPT_NAME => '/cgi-bin/svc.fcgi',
                    PATH_INFO => '/api/extensions' }, '', $bin);
($st, $h, $body) = parse_cgi($out);
is $st, 200, 'CGI: PATH_INFO routing';
is $J->decode($body)->{extensions}[0]{name}, 'clock', 'CGI: extensions body';

# POST with a body on stdin
my $req = $J->encode({ session_id => 'cgi-sess', messages => [{ role => 'user', content => 'hello cgi' }] });
($out, $err) = run_with({ %base, REQUEST_METHOD => 'POST', REQUEST_URI => '/api/chat',
                          CONTENT_TYPE => 'application/json', CONTENT_LENGTH => length $req }, $req, $bin);
($st, $h, $body) = parse_cgi($out);
is $st, 200, 'CGI: POST /api/chat 200' or diag $out, $err;
is $h->{'x-session-id'}, 'cgi-sess', 'CGI: X-Session-Id';
my $j = $J->decode($body);
like $j->{content}, qr/hello cgi/, 'CGI: echo answer';
ok -d "$home/agents/native_sessions/session_cgi-sess", 'CGI: session stored';

# a body that is not JSON: 415 with its reason phrase (it was "415 Unknown")
($out) = run_with({ %base, REQUEST_METHOD => 'POST', REQUEST_URI => '/api/chat',
                    CONTENT_TYPE => 'text/plain', CONTENT_LENGTH => 2 }, 'hi', $bin);
($st, $h) = parse_cgi($out);
is $h->{status}, '415 Unsupported Media Type', 'CGI: 415 names its reason';

# errors in CGI mode: 404 and a wrong method
($out) = run_with({ %base, REQUEST_METHOD => 'GET', REQUEST_URI => '/api/nope' }, '', $bin);
($st) = parse_cgi($out);
is $st, 404, 'CGI: 404';
($out) = run_with({ %base, REQUEST_METHOD => 'DELETE', REQUEST_URI => '/api/health' }, '', $bin);
($st, $h) = parse_cgi($out);
is $st, 405, 'CGI: 405';
is $h->{allow}, 'GET, HEAD', 'CGI: Allow';

# a broken config in CGI mode: a JSON 500, not a crash
my $bad = SvcTest->make_home('');
SvcTest::write_file("$bad/agents.yaml", "server:\n  workers: lots\n");
($out, $err, $rc) = run_with({ %base, SVC_HOME => $bad, REQUEST_METHOD => 'GET',
                               REQUEST_URI => '/api/health' }, '', $bin);
($st, $h, $body) = parse_cgi($out);
is $st, 500, 'CGI: broken config answers 500';
is eval { $J->decode($body)->{error}{code} }, 'config_error', 'CGI: config_error';

# "<tool> missing" for the first of these not on PATH, else ''.
sub missing {
    for my $t (@_) {
        return "$t missing" unless grep { -x "$_/$t" } split /:/, $ENV{PATH};
    }
    return '';
}

# A program started in the background in its own process group, with $home as SVC_HOME and
# no CGI variables; stop_bg sends SIGTERM and says whether it stopped in time.
sub start_bg {
    my ($log, @cmd) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        setpgrp(0, 0);
        $ENV{SVC_HOME} = $home;
        delete $ENV{$_} for grep { /^(REQUEST_|GATEWAY_)/ } keys %ENV;
        open STDERR, '>', $log;
        open STDIN, '<', '/dev/null';
        exec @cmd or POSIX::_exit(127);
    }
    return $pid;
}

sub stop_bg {
    my ($pid) = @_;
    kill 'TERM', $pid;
    my $gone = SvcTest::wait_for(10, sub { waitpid($pid, WNOHANG) == $pid });
    kill 'KILL', -$pid;
    waitpid($pid, 0) unless $gone;
    return $gone;
}

# a listing built in the background never holds the CGI answer's pipes (nor a socket on fd 0)
SKIP: {
    skip 'test hooks not built (SVC_TEST_INDEX_BUILD_DELAY)', 4 unless SvcTest::test_hooks_built();
    skip 'caches off (SVC_TEST_CACHE=off): no listing database to build', 4 if SvcTest::cache_off();
    my $dir = tempdir(CLEANUP => 1);
    my $h2 = SvcTest->make_home('');
    my ($o1) = run_with({ %base, SVC_HOME => $h2, REQUEST_METHOD => 'POST', REQUEST_URI => '/api/chat',
                          CONTENT_LENGTH => length $req, CONTENT_TYPE => 'application/json' }, $req, $bin);
    like $o1, qr/^Status: 200/, 'CGI: a turn, so that there is a listing to build';
    pipe(my $rd, my $wr) or die;
    pipe(my $erd, my $ewr) or die;
    my $t0 = time;
    my $pid = fork // die;
    if ($pid == 0) {
        delete @ENV{grep { /^(REQUEST_|CONTENT_|QUERY_|SVC_)/ } keys %ENV};
        %ENV = (%ENV, %base, SVC_HOME => $h2, SVC_TEST_INDEX_BUILD_DELAY => 3,
                REQUEST_METHOD => 'GET', REQUEST_URI => '/api/v1/chat/sessions');
        open STDIN, '<', '/dev/null';
        open STDOUT, '>&', $wr;
        open STDERR, '>&', $ewr;
        exec $bin or POSIX::_exit(127);
    }
    close $wr;
    close $ewr;
    my $o = do { local $/; <$rd> };
    my $e = do { local $/; <$erd> };
    my $took = time - $t0;
    waitpid $pid, 0;
    my ($s3, $h3) = parse_cgi($o // '');
    is $s3, 200, 'CGI: a list while the listing is built in the background: 200';
    is $h3->{'x-svc-index'}, 'building', '  ... and says so';
    ok $took < 2.5, '  stdout and stderr end with the request, not with the build (mod_cgi waits for both)'
        or diag "took ${took}s";
}

# --- FastCGI on fd 0 (spawn-fcgi -n: exec with the socket as stdin) ---
SKIP: {
    skip missing('spawn-fcgi', 'cgi-fcgi'), 8 if missing('spawn-fcgi', 'cgi-fcgi');
    my $dir = tempdir(CLEANUP => 1);
    my $sock = "$dir/fcgi.sock";
    my $pid = start_bg("$dir/fcgi.log", 'spawn-fcgi', '-n', '-s', $sock, '-M', '0600', '--', $bin,
                       '--workers', '2');
    my $up = SvcTest::wait_for(10, sub { -S $sock && (SvcTest::read_file("$dir/fcgi.log") // '') =~ /master started/ });
    ok $up, 'spawn-fcgi: svc-fcgi started on the fd-0 socket';
    like SvcTest::read_file("$dir/fcgi.log"), qr/serving the socket on fd 0/, 'took the socket from fd 0';

    ($out) = run_with({ REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health', SCRIPT_NAME => '',
                        HTTP_X_REQUEST_ID => 'fd0-1' }, '', 'cgi-fcgi', '-bind', '-connect', $sock);
    ($st, $h, $body) = parse_cgi($out);
    is $st, 200, 'fd 0: health 200';
    is $h->{'x-request-id'}, 'fd0-1', 'fd 0: request id';
    is eval { $J->decode($body)->{status} }, 'ok', 'fd 0: health body';

    ($out) = run_with({ REQUEST_METHOD => 'POST', REQUEST_URI => '/api/chat',
                        CONTENT_LENGTH => length $req, CONTENT_TYPE => 'application/json' },
                      $req, 'cgi-fcgi', '-bind', '-connect', $sock);
    ($st, $h, $body) = parse_cgi($out);
    is $st, 200, 'fd 0: chat 200';
    like eval { $J->decode($body)->{content} }, qr/given 2 earlier messages/, 'fd 0: second turn restored';

    ok stop_bg($pid), 'fd 0: SIGTERM stops it';
}

# --- --listen tcp:PORT binds loopback; a live unix socket is never stolen ---
SKIP: {
    skip missing('cgi-fcgi'), 5 if missing('cgi-fcgi');
    my $dir = tempdir(CLEANUP => 1);
    my $port = SvcTest::free_port();
    my $pid = start_bg("$dir/tcp.log", $bin, '--listen', "tcp:$port", '--workers', '1');
    SvcTest::wait_for(10, sub { (SvcTest::read_file("$dir/tcp.log") // '') =~ /master started/ });
    my $ss = `ss -ltnH 2>/dev/null`;
    like $ss, qr/127\.0\.0\.1:$port\b/, 'tcp:PORT listens on 127.0.0.1';
    unlike $ss, qr/(?:0\.0\.0\.0|\*):$port\b/, 'not on every interface';
    ($out) = run_with({ REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' }, '',
                      'cgi-fcgi', '-bind', '-connect', "127.0.0.1:$port");
    ($st) = parse_cgi($out // '');
    is $st, 200, 'tcp: health 200';
    kill 'TERM', $pid;
    ok SvcTest::wait_for(10, sub { waitpid($pid, WNOHANG) == $pid }), 'tcp: stopped';

    # a second instance on a live unix socket refuses to start
    my $sock = "$dir/live.sock";
    $pid = start_bg("$dir/a.log", $bin, '--listen', "unix:$sock", '--workers', '1');
    SvcTest::wait_for(10, sub { (SvcTest::read_file("$dir/a.log") // '') =~ /master started/ });
    is +(stat $sock)[2] & 07777, 0660, 'unix socket has server.socket_mode (default 0660)';
    my (undef, $e2, $rc2) = run_with({ SVC_HOME => $home }, '', $bin, '--listen', "unix:$sock");
    isnt $rc2, 0, 'second instance on a live socket exits non-zero';
    like $e2, qr/in use/, 'and says the socket is in use';
    ($out) = run_with({ REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' }, '',
                      'cgi-fcgi', '-bind', '-connect', $sock);
    ($st) = parse_cgi($out // '');
    is $st, 200, 'the first instance still serves';
    kill 'TERM', $pid;
    ok SvcTest::wait_for(10, sub { waitpid($pid, WNOHANG) == $pid }), 'stopped';
    ok !-e $sock, 'socket removed on exit';
}

# --- LISTEN_FDS (systemd socket activation: the socket on fd 3) ---
SKIP: {
    skip missing('systemd-socket-activate', 'cgi-fcgi'), 3 if missing('systemd-socket-activate', 'cgi-fcgi');
    my $dir = tempdir(CLEANUP => 1);
    my $sock = "$dir/act.sock";
    my $pid = start_bg("$dir/fcgi.log", 'systemd-socket-activate', '-l', $sock, $bin, '--workers', '1');
    SvcTest::wait_for(10, sub { -S $sock });
    # the first connection starts svc-fcgi, which then serves it from fd 3
    ($out) = run_with({ REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' }, '',
                      'cgi-fcgi', '-bind', '-connect', $sock);
    ($st) = parse_cgi($out // '');
    is $st, 200, 'LISTEN_FDS: health 200';
    like SvcTest::read_file("$dir/fcgi.log") // '', qr/serving the socket on fd 3/, 'took fd 3';
    ok stop_bg($pid), 'LISTEN_FDS: SIGTERM stops it';
}

done_testing;
