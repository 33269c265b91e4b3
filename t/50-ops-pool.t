#!/usr/bin/perl
# Ops (issue 12): a pool that drains on SIGTERM (two pools behind one nginx upstream: every
# request sent during the drain succeeds, none waits for the drain), an inherited socket
# left to its owner, respawn at once and crash-loop backoff, SIGUSR1 reopening --log FILE,
# nginx's $request_id in svc's log line, and bad configuration refused with one line and
# exit code 3.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use IO::Socket::UNIX;
use POSIX qw(WNOHANG);
use Socket qw(SOCK_STREAM SOL_SOCKET SO_RCVTIMEO);
use Time::HiRes qw(sleep time);
use SvcTest;
use SvcOps;

my $JSON = $SvcTest::JSON;

# The workers of a master (children whose parent is $master).
sub children_of {
    my ($master) = @_;
    my @kids;
    for my $st (glob '/proc/[0-9]*/stat') {
        my $t = SvcTest::read_file($st) // next;
        push @kids, $1 if $t =~ /^(\d+) \(.*\) \S (\d+)/ && $2 == $master;
    }
    return @kids;
}

sub chat_body {
    my ($sid, $text) = @_;
    return { session_id => $sid, messages => [{ role => 'user', content => $text }] };
}

# A pool of one worker on a unix socket ($dir/<tag>-unix.sock) or a TCP listener: (pool, a
# sub that connects to it). The worker is up when it returns.
sub one_worker_pool {
    my ($dir, $home, $tag, $kind) = @_;
    my $port = SvcTest::free_port();
    my $sock = "$dir/$tag-$kind.sock";
    my $p = SvcOps::pool(home => $home, sock => $sock, workers => 1,
                         $kind eq 'tcp' ? (listen => "tcp:127.0.0.1:$port") : ());
    ok SvcTest::wait_for(10, sub { children_of($p->{pid}) == 1 }), "$tag $kind: one worker";
    my $conn = sub {
        ($kind eq 'tcp'
            ? IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 5)
            : IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $sock)) // die "connect: $!";
    };
    return ($p, $conn);
}

my $dir = SvcOps::tmpdir();
my $home = SvcTest->make_home("server:\n  workers: 2\n");

# ==== drain: two pools on one root behind one upstream ====
{
    my $a = SvcOps::pool(home => $home, sock => "$dir/a.sock", workers => 2);
    my $b = SvcOps::pool(home => $home, sock => "$dir/b.sock", workers => 2);
    my $n = SvcOps::nginx(dir => "$dir/ngx",
        upstream => "server unix:$dir/a.sock;\nserver unix:$dir/b.sock;");
    my $url = "http://127.0.0.1:$n->{port}";
    is SvcOps::http(GET => "$url/api/health")->{status}, 200, 'two pools behind nginx';
    is +(stat "$dir/a.sock")[2] & 07777, 0660, 'socket mode 0660 (server.socket_mode default)';

    # two slow runs, so that each pool very likely holds one; find one pool that does
    my @slow;
    for my $i (1, 2) {
        my $out = "$dir/slow$i.json";
        my $pid = fork // die;
        if ($pid == 0) {
            my $r = SvcOps::http(POST => "$url/api/chat", timeout => 120,
                body => chat_body("slow-$i", '/slow 400 ' . join(' ', map { "w$_" } 1 .. 25)));
            SvcTest::write_file($out, $JSON->encode({ status => $r->{status}, json => $r->{json} }));
            POSIX::_exit(0);
        }
        push @slow, { pid => $pid, out => $out, sid => "slow-$i" };
    }
    my $root = "$home/agents/native_sessions";
    my %runner;   # session -> worker pid
    ok SvcTest::wait_for(30, sub {
        for my $s (@slow) {
            my $j = eval { $JSON->decode(SvcTest::read_file("$root/session_$s->{sid}/svc_session.json") // '') };
            $runner{ $s->{sid} } = $j->{current_run}{pid} if $j && $j->{current_run};
        }
        keys %runner == 2;
    }), 'two slow runs in flight';
    my %in_a = map { $_ => 1 } children_of($a->{pid});
    my %in_b = map { $_ => 1 } children_of($b->{pid});
    my ($drain, $other) = (grep { $in_a{$_} } values %runner) ? ($a, $b) : ($b, $a);
    my ($busy) = grep { my $w = $runner{$_}; $drain == $a ? $in_a{$w} : $in_b{$w} } keys %runner;
    ok $busy, "the draining pool serves $busy" or diag explain \%runner;

    kill 'TERM', $drain->{pid};
    ok SvcTest::wait_for(10, sub { !-e $drain->{sock} }), 'SIGTERM: its socket is unlinked at once';
    my $c = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $drain->{sock});
    ok !$c, 'a new connection to it is refused';
    like SvcOps::slurp($drain->{log}), qr/stop: signal 15, socket closed to new connections/,
        'drain logged';

    # requests during the drain: all succeed, and all before the busy run ends
    my $okc = 0;
    for my $i (1 .. 12) {
        my $r = SvcOps::http(POST => "$url/api/chat", body => chat_body("during-$i", "hello $i"));
        $okc++ if $r->{status} == 200 && ($r->{json}{content} // '') =~ /hello $i/;
    }
    is $okc, 12, '12 POSTs during the drain all answered 200';
    is SvcOps::http(GET => "$url/api/health")->{status}, 200, 'GET too';
    my $st = eval { $JSON->decode(SvcTest::read_file("$root/session_$busy/svc_session.json")) };
    is $st->{status}, 'running', 'none of them waited for the in-flight run of the draining pool';
    ok kill(0, $drain->{pid}), 'the draining pool is still finishing it';

    for my $s (@slow) { waitpid($s->{pid}, 0) }
    for my $s (@slow) {
        my $res = eval { $JSON->decode(SvcTest::read_file($s->{out})) } // {};
        is $res->{status}, 200, "in-flight $s->{sid} finished";
        like $res->{json}{content} // '', qr/w1 w2 .* w25/, 'with its whole answer';
    }
    ok SvcTest::wait_for(30, sub { waitpid($drain->{pid}, WNOHANG) == $drain->{pid} }),
        'the draining pool exited';
    is $? >> 8, 0, 'with status 0';
    SvcOps::stop_pid($other->{pid});
    SvcOps::stop_pid($n->{pid});
}

# ==== a SIGKILLed master under steady load: its workers drain for a bounded time and go,
# and a new master binds the same socket name (the name was never removed, so without the
# bound the queue never empties and the workers never leave; found by make torture) ====
{
    my $sock = "$dir/k.sock";
    my $p = SvcOps::pool(home => $home, sock => $sock, workers => 2);
    my @w;
    ok SvcTest::wait_for(10, sub { @w = children_of($p->{pid}); @w == 2 }), 'two workers';
    my $n = SvcOps::nginx(dir => "$dir/ngx-k", upstream => "server unix:$sock;");
    my @flood;
    for my $c (1 .. 8) {    # slow turns through nginx, back to back: 2 workers, 8 clients,
        my $f = fork // die;  # so the queue is never empty
        if ($f == 0) {
            my $end = time + 40;
            SvcOps::http(POST => "http://127.0.0.1:$n->{port}/api/chat", timeout => 10,
                         body => chat_body("flood-$c", '/slow 150 x')) while time < $end;
            POSIX::_exit(0);
        }
        push @flood, $f;
    }
    select(undef, undef, undef, 0.3);
    kill 'KILL', $p->{pid};
    waitpid $p->{pid}, 0;
    ok SvcTest::wait_for(20, sub { !grep { kill 0, $_ } @w }), "the master's workers leave under load"
        or diag SvcOps::slurp($p->{log});
    my $q = eval { SvcOps::pool(home => $home, sock => $sock, workers => 1, log => "$dir/k2.log") };
    ok $q, 'a new master binds the same socket name' or diag $@;
    kill 'KILL', @flood;
    waitpid $_, 0 for @flood;
    SvcOps::stop_pid($q->{pid}) if $q;
    SvcOps::stop_pid($n->{pid});
}

# ==== drain of an own TCP listener: shut down at once, the in-flight request finishes ====
{
    my $port = SvcTest::free_port();
    my $p = SvcOps::pool(home => $home, listen => "tcp:127.0.0.1:$port", sock => "$dir/tcp",
                         workers => 1);
    my $n = SvcOps::nginx(dir => "$dir/ngx-t", upstream => "server 127.0.0.1:$port;");
    my $out = "$dir/tcp-slow.json";
    my $kid = fork // die;
    if ($kid == 0) {
        my $r = SvcOps::http(POST => "http://127.0.0.1:$n->{port}/api/chat", timeout => 60,
                             body => chat_body('tcp-slow', '/slow 300 a b c d e f g h'));
        SvcTest::write_file($out, $JSON->encode({ status => $r->{status}, json => $r->{json} }));
        POSIX::_exit(0);
    }
    my $sc = "$home/agents/native_sessions/session_tcp-slow/svc_session.json";
    ok SvcTest::wait_for(20, sub { (SvcTest::read_file($sc) // '') =~ /"status": "running"/ }),
        'tcp: a slow request in flight';
    kill 'TERM', $p->{pid};
    ok SvcTest::wait_for(10, sub { !IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 2) }),
        'tcp: new connections refused while it drains';
    ok kill(0, $p->{pid}), 'tcp: the pool is still finishing';
    waitpid $kid, 0;
    my $res = eval { $JSON->decode(SvcTest::read_file($out)) } // {};
    is $res->{status}, 200, 'tcp: the in-flight request finished';
    like $res->{json}{content} // '', qr/a b c d e f g h/, 'tcp: whole';
    ok SvcTest::wait_for(20, sub { waitpid($p->{pid}, WNOHANG) == $p->{pid} }), 'tcp: pool exited';
    SvcOps::stop_pid($n->{pid});
}

# ==== signals while a request runs: reopen (SIGUSR1) and stop (SIGTERM) signals landing while
# the worker waits for the rest of a request body break nothing, on a unix socket and on TCP
# (a worker's signals stay blocked; it reads them from a signalfd while it waits for work);
# and an idle worker leaves at a stop signal ====
for my $kind ('unix', 'tcp') {
    my ($p, $conn) = one_worker_pool($dir, $home, 'sig', $kind);
    my @w = children_of($p->{pid});
    my $text = join ' ', map { "s$_" } 1 .. 400;
    my $body = $JSON->encode(chat_body("sig-$kind", $text));
    my $half = int(length($body) / 2);
    my %params = (REQUEST_METHOD => 'POST', SCRIPT_NAME => '/api/chat', REQUEST_URI => '/api/chat',
                  CONTENT_TYPE => 'application/json', CONTENT_LENGTH => length $body,
                  SERVER_PROTOCOL => 'HTTP/1.1', REMOTE_ADDR => '127.0.0.1');
    my $out = SvcOps::fcgi_request($conn->(), \%params,
        [substr($body, 0, $half), substr($body, $half)], sub {
            return if $_[0] > 0;
            sleep 0.2;    # the worker now waits in read(2) for the rest
            for my $sig (qw(USR1 USR1 TERM)) { kill $sig, $w[0]; sleep 0.1 }
        });
    ok defined $out, "$kind: signals during the body's read: the request ends normally";
    like $out // '', qr/^Status: 200/m, "$kind: with 200";
    like $out // '', qr/s1 s2 .* s400/, "$kind: and the whole answer";
    ok SvcTest::wait_for(10, sub { !kill 0, $w[0] }), "$kind: then the worker stops (SIGTERM)";
    my @n;
    ok SvcTest::wait_for(10, sub { @n = children_of($p->{pid}); @n == 1 && $n[0] != $w[0] }),
        "$kind: and is replaced";
  SKIP: {
        skip 'strace not installed', 3 unless system('strace -V >/dev/null 2>&1') == 0;
        # a request whose input has ended is closed at once (no shutdown, poll and read);
        # the signal mask is never touched (a worker's signals stay blocked: it reads them
        # from a signalfd between requests)
        my $log = "$dir/sig-$kind.strace";
        my $spid = SvcTest::strace_start($n[0], $log);
        my $get = SvcOps::fcgi_request($conn->(), { %params, REQUEST_METHOD => 'GET',
            SCRIPT_NAME => '/api/health', REQUEST_URI => '/api/health', CONTENT_LENGTH => 0 }, ['']);
        my $tr = SvcTest::strace_stop($spid, $log);
        ok +($get // '') =~ /^Status: 200/m && $tr =~ /close\(/ && $tr !~ /shutdown\(/,
            "$kind: a GET is closed without libfcgi's shutdown and drain" or diag $tr;
        my $masks = () = $tr =~ /rt_sigprocmask\(/g;
        ok $masks == 0,
            "$kind: signal mask calls per request: $masks" or diag $tr;
        # a body left unread (declared above the drain limit: a 413 at once) keeps libfcgi's
        # orderly close: shutdown, then the rest is read until the client closes
        $spid = SvcTest::strace_start($n[0], $log);
        my $big = SvcOps::fcgi_request($conn->(),
            { %params, CONTENT_LENGTH => 100 * 1024 * 1024 }, ['x' x 4000, undef]);
        $tr = SvcTest::strace_stop($spid, $log);
        ok +($big // '') =~ /^Status: 413/m && $tr =~ /shutdown\(/,
            "$kind: a 413 with its body unread is closed in order (shutdown first)" or diag $tr;
    }
    sleep 0.3;    # idle in accept(2)
    kill 'TERM', $n[0];
    ok SvcTest::wait_for(5, sub { !kill 0, $n[0] }), "$kind: an idle worker leaves at SIGTERM";
    SvcOps::stop_pid($p->{pid});
}

# ==== a signal while a new connection's first bytes are awaited (up to 2 s on a unix socket,
# as libfcgi allowed): a reopen or stop signal landing then must not cost the web server a
# 502, on a unix socket, on TCP and on an inherited socket (below) ====
sub keeper_checks {
    my ($tag, $master, $conn) = @_;
    my %params = (REQUEST_METHOD => 'GET', SCRIPT_NAME => '/api/health', REQUEST_URI => '/api/health',
                  CONTENT_LENGTH => 0, SERVER_PROTOCOL => 'HTTP/1.1', REMOTE_ADDR => '127.0.0.1');
    my @w;
    for my $sig (qw(USR1 TERM)) {
        ok SvcTest::wait_for(10, sub { @w = children_of($master); @w == 1 }), "keeper $tag: a worker ($sig)";
        sleep 0.3;    # idle in accept(2)
        my $c = $conn->();
        sleep 0.3;    # accepted: the worker waits in libfcgi's poll or read for the request
        kill $sig, $w[0];
        sleep 0.2;
        my $out = SvcOps::fcgi_request($c, \%params, ['']);
        like $out // '', qr/^Status: 200/m,
            "keeper $tag: SIG$sig while the first bytes are awaited: the connection is still answered";
    }
    ok SvcTest::wait_for(10, sub { !kill 0, $w[0] }), "keeper $tag: the worker left after answering (SIGTERM)";
}
for my $kind ('unix', 'tcp') {
    my ($p, $conn) = one_worker_pool($dir, $home, 'keeper', $kind);
    keeper_checks($kind, $p->{pid}, $conn);
    SvcOps::stop_pid($p->{pid});
}
# ... but a connection that sends nothing does not hold a stop: a stopping worker gives it
# 2 s, as libfcgi gives a unix-socket one (on TCP libfcgi's read had no time limit, and the
# drain waited for it as long as the client kept the connection open)
for my $kind ('unix', 'tcp') {
    my ($p, $conn) = one_worker_pool($dir, $home, 'silent', $kind);
    my @w = children_of($p->{pid});
    sleep 0.3;
    my $c = $conn->();
    sleep 0.3;    # accepted: the worker waits for the first bytes
    kill 'TERM', $p->{pid};
    ok SvcTest::wait_for(10, sub { waitpid($p->{pid}, WNOHANG) == $p->{pid} }),
        "silent $kind: SIGTERM with a connection that sends nothing: the pool stops";
    $c->blocking(0);
    my $got = sysread($c, my $buf, 1);
    ok defined $got && $got == 0, "silent $kind: that connection is closed";
    close $c;
}

# ==== an inherited socket (fd 0) is left to its owner ====
{
    my $path = "$dir/inh.sock";
    my $l = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $path, Listen => 16) or die $!;
    my $log = "$dir/inh.log";
    my $pid = fork // die;
    if ($pid == 0) {
        setpgrp(0, 0);
        open STDIN, '<&', $l or POSIX::_exit(127);
        open STDERR, '>', $log;
        $ENV{SVC_HOME} = $home;
        delete $ENV{$_} for grep { /^(REQUEST_|GATEWAY_|LISTEN_)/ } keys %ENV;
        exec SvcTest::fcgi_bin(), '--workers', '1' or POSIX::_exit(127);
    }
    ok SvcTest::wait_for(10, sub { SvcOps::slurp($log) =~ /master started/ }), 'fd 0 pool started';
    keeper_checks('fd 0', $pid, sub { IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $path) // die $! });
    kill 'TERM', $pid;
    ok SvcTest::wait_for(20, sub { waitpid($pid, WNOHANG) == $pid }), 'fd 0 pool stopped';
    like SvcOps::slurp($log), qr/inherited socket left to its owner/, 'drain says so';
    ok -S $path, 'the inherited socket file is still there';
    ok +(IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $path) ? 1 : 0),
        'and its owner still takes connections';
    my $tv = getsockopt($l, SOL_SOCKET, SO_RCVTIMEO);
    ok defined $tv && $tv !~ /[^\0]/, 'its options as they were: no receive timeout left on it';
    close $l;
}

# ==== respawn at once; a crash loop backs off ====
{
    my $p = SvcOps::pool(home => $home, sock => "$dir/r.sock", workers => 2);
    my $n = SvcOps::nginx(dir => "$dir/ngx-r", upstream => "server unix:$dir/r.sock;");
    my $url = "http://127.0.0.1:$n->{port}";
    my @w;
    ok SvcTest::wait_for(10, sub { @w = children_of($p->{pid}); @w == 2 }), 'two workers';
    kill 'KILL', @w;
    # dead for sure (a worker may still accept a connection while its SIGKILL is pending)
    ok SvcTest::wait_for(10, sub {
        !grep { (SvcTest::read_file("/proc/$_/stat") // '') =~ /^\d+ \(.*\) [^Z]/ } @w }),
        'both workers dead';
    my $r = SvcOps::http(POST => "$url/api/chat", body => chat_body('after-kill', 'still here'));
    is $r->{status}, 200, 'a request right after both workers were killed is served';
    my %new = map { $_ => 1 } children_of($p->{pid});
    ok !grep({ $new{$_} } @w), 'by new workers';
    my $log = SvcOps::slurp($p->{log});
    is scalar(() = $log =~ /killed by signal 9/g), 2, 'both deaths logged';
    unlike $log, qr/crash loop/, 'two deaths of workers that ran a while are no crash loop';

    # SIGUSR1 reopens --log FILE (here the pool's log is stderr: use a second pool)
    SvcOps::stop_pid($p->{pid});
    SvcOps::stop_pid($n->{pid});
    my $lf = "$dir/svc.log";
    $p = SvcOps::pool(home => $home, sock => "$dir/l.sock", workers => 2, log => "$dir/l.stderr",
                      args => ['--log', $lf], watch => $lf);
    $n = SvcOps::nginx(dir => "$dir/ngx-l", upstream => "server unix:$dir/l.sock;");
    $url = "http://127.0.0.1:$n->{port}";
    like SvcOps::slurp($lf), qr/master started/, '--log FILE receives the log';
    is SvcOps::slurp("$dir/l.stderr"), '', 'stderr stays empty';
    SvcOps::http(GET => "$url/api/health", headers => { 'x-request-id' => 'before-rotate' });
    ok SvcTest::wait_for(10, sub { SvcOps::slurp($lf) =~ /rid=before-rotate/ }), 'request logged';
    rename $lf, "$lf.1" or die;
    kill 'USR1', $p->{pid};
    ok SvcTest::wait_for(10, sub { SvcOps::slurp($lf) =~ /log: reopened/ }), 'SIGUSR1: reopened';
    # the workers reopen as the signal reaches them: wait until both answer into the new file
    ok SvcTest::wait_for(20, sub {
        my $id = 'probe-' . int(rand 1e9);
        SvcOps::http(GET => "$url/api/health", headers => { 'x-request-id' => $id });
        SvcOps::http(GET => "$url/api/health", headers => { 'x-request-id' => "$id-b" });
        my $t = SvcOps::slurp($lf);
        $t =~ /rid=$id\b/ && $t =~ /rid=$id-b\b/;
    }), 'requests after the rotation go to the new file';
    SvcOps::http(GET => "$url/api/health", headers => { 'x-request-id' => "after-$_" }) for 1 .. 4;
    ok SvcTest::wait_for(10, sub { my $t = SvcOps::slurp($lf); !grep { $t !~ /rid=after-$_\b/ } 1 .. 4 }),
        'all of them';
    unlike SvcOps::slurp("$lf.1"), qr/rid=after-/, 'none to the rotated one';
    like SvcOps::slurp("$lf.1"), qr/rid=before-rotate/, 'which kept the earlier lines';
    SvcOps::stop_pid($p->{pid});
    SvcOps::stop_pid($n->{pid});

    $p = SvcOps::pool(home => $home, sock => "$dir/c.sock", workers => 2,
                      env => { SVC_TEST_WORKER_CRASH => 1 });
    ok SvcTest::wait_for(20, sub { SvcOps::slurp($p->{log}) =~ /crash loop: \d+ workers died within 1s of starting; next spawn in 1s/ }),
        'workers dying right after start: crash loop logged with a delay';
    ok SvcTest::wait_for(30, sub { SvcOps::slurp($p->{log}) =~ /next spawn in 2s/ }),
        'the delay grows while it goes on';
    ok kill(0, $p->{pid}), 'the master stays up';
    SvcOps::stop_pid($p->{pid});
    is $? >> 8, 0, 'and stops cleanly';
}

# ==== nginx's $request_id ties nginx's access line to svc's line ====
{
    my $p = SvcOps::pool(home => $home, sock => "$dir/q.sock", workers => 1);
    my $n = SvcOps::nginx(dir => "$dir/ngx-q", upstream => "server unix:$dir/q.sock;",
        http => "log_format svc '\$request_id \$upstream_http_x_request_id \$status \$request_uri';\n");
    SvcOps::stop_pid($n->{pid});
    # the same prefix again, with an access log in the server block
    $n = SvcOps::nginx(dir => "$dir/ngx-q", upstream => "server unix:$dir/q.sock;",
        http => "log_format svc '\$request_id \$upstream_http_x_request_id \$status \$request_uri';\n",
        server => "access_log $dir/ngx-q/logs/access.log svc;\ninclude svc/svc.conf;\n");
    my $url = "http://127.0.0.1:$n->{port}";
    my $r = SvcOps::http(GET => "$url/api/health");
    my $rid = $r->{headers}{'x-request-id'} // '';
    like $rid, qr/^[0-9a-f]{32}$/, "X-Request-Id is nginx's \$request_id";
    SvcOps::http(GET => "$url/api/health", headers => { 'x-request-id' => 'client-id-7' });
    SvcOps::stop_pid($n->{pid});    # flushes the access log
    my $acc = SvcOps::slurp("$dir/ngx-q/logs/access.log");
    like $acc, qr/^$rid $rid 200 \/api\/health$/m, 'access line: $request_id = $upstream_http_x_request_id';
    like $acc, qr/^[0-9a-f]{32} client-id-7 200 /m, "a client's sane id is echoed, and logged upstream";
    like SvcOps::slurp($p->{log}), qr/GET \/api\/health 200 .* rid=$rid /, "svc's line has the same id";
    SvcOps::stop_pid($p->{pid});
}

# ==== bad configuration: one line naming the setting, exit code 3 ====
{
    my $bad = sub {
        my ($yaml, $args, $want, $what) = @_;
        my $h = SvcTest->make_home($yaml);
        my ($rc, $err) = SvcOps::run_fcgi({ SVC_HOME => $h }, @$args);
        is $rc, 3, "$what: exit code 3";
        my @lines = grep { length } split /\n/, $err;
        is scalar(@lines), 1, "$what: one line" or diag $err;
        like $err, $want, "$what: names the setting and the reason";
    };
    $bad->("server:\n  socket_group: no-such-group-x\n", ['--listen', "unix:$dir/g.sock"],
           qr/server\.socket_group: no such group 'no-such-group-x'/, 'unknown group');
    $bad->("server:\n  listen: unix:$dir/missing/dir/s.sock\n", [],
           qr/server\.listen: the directory \Q$dir\E\/missing\/dir of socket .* does not exist/,
           'socket in a missing directory');
    $bad->('', ['--listen', "unix:$dir/nope/s.sock"], qr/--listen: the directory .* does not exist/,
           '--listen in a missing directory');
    $bad->("server:\n  base_path: svc\n", ['--listen', "unix:$dir/bp.sock"],
           qr/server\.base_path: must start with '\/'/, 'base path without a leading slash');
    $bad->("server:\n  socket_mode: \"999\"\n", ['--listen', "unix:$dir/m.sock"],
           qr/server\.socket_mode: not an octal mode/, 'socket mode not octal');
    $bad->('', ['--listen', "unix:$dir/u.sock", '--user', 'no-such-user-x'],
           qr/--user: no such user 'no-such-user-x'/, 'unknown --user');
    ok !-e "$dir/g.sock" && !-e "$dir/bp.sock", 'no socket left behind by a refusal';
}

# ==== a socket that cannot be opened: one line naming the setting, exit code 4 ====
# (libfcgi's FCGX_OpenSocket exited with errno as the status and its own perror line)
{
    my $held = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1', LocalPort => 0,
                                     Proto => 'tcp', ReuseAddr => 1) or die "listen: $!";
    my $port = $held->sockport;
    my $refused = sub {
        my ($args, $want, $what) = @_;
        my $h = SvcTest->make_home('');
        my ($rc, $err) = SvcOps::run_fcgi({ SVC_HOME => $h }, @$args);
        is $rc, 4, "$what: exit code 4";
        my @lines = grep { length } split /\n/, $err;
        is scalar(@lines), 1, "$what: one line" or diag $err;
        like $err, $want, "$what: names the setting and the reason";
    };
    $refused->(['--listen', "tcp:$port"],
               qr/--listen: cannot listen on 127\.0\.0\.1:\Q$port\E: Address already in use/, 'TCP port in use');
    $refused->(['--listen', "tcp:127.0.0.1:$port"],
               qr/--listen: cannot listen on 127\.0\.0\.1:$port: Address already in use/,
               'TCP host:port in use');
    # a name is IPv4, as libfcgi bound it: localhost stays 127.0.0.1 even where /etc/hosts
    # also gives ::1 (a held IPv4 port is in use for tcp:localhost:PORT)
    $refused->(['--listen', "tcp:localhost:$port"],
               qr/--listen: cannot listen on localhost:$port: Address already in use/,
               'TCP localhost:port binds IPv4');
    $refused->(['--listen', 'tcp:no-such-host.invalid:9'],
               qr/--listen: cannot listen on no-such-host\.invalid:9: /, 'TCP host that does not resolve');
    $refused->(['--listen', 'unix:/proc/svc-test.sock'],
               qr{--listen: cannot listen on /proc/svc-test\.sock: }, 'unix socket where none can be made');
    close $held;

    # [IPv6]:port, when this machine has an IPv6 loopback
    my $v6 = eval { require IO::Socket::IP; IO::Socket::IP->new(Listen => 1, LocalHost => '::1',
                                                                  LocalPort => 0) };
    SKIP: {
        skip 'no IPv6 loopback here', 2 unless $v6;
        my $p6 = $v6->sockport;
        close $v6;
        my $h = SvcTest->make_home('');
        my $pid = fork // die;
        if ($pid == 0) {
            open STDIN, '<', '/dev/null';
            open STDERR, '>', "$dir/v6.log";
            $ENV{SVC_HOME} = $h;
            exec SvcTest::fcgi_bin(), '--listen', "tcp:[::1]:$p6", '--workers', '1' or POSIX::_exit(127);
        }
        ok SvcTest::wait_for(10, sub { (SvcTest::read_file("$dir/v6.log") // '') =~ /master started/ }),
           'tcp:[::1]:PORT: listening';
        my $c = IO::Socket::IP->new(PeerHost => '::1', PeerPort => $p6);
        ok $c, 'tcp:[::1]:PORT: takes a connection';
        close $c;
        kill 'TERM', $pid;
        waitpid $pid, 0;
    }
}

done_testing;
