#!/usr/bin/perl
# Ops (issue 12): the shipped Apache files, each included unchanged in a private Apache
# (own ServerRoot, loopback port) and driven by the same black-box checks: health, auth
# (401 JSON without the token), a chat, an SSE stream that arrives while the run is still
# going, the session listed, and 413 as JSON. nginx/apache-proxy-fcgi.conf in front of a
# running pool; nginx/apache-fcgid.conf and nginx/apache-cgi.conf running svc-fcgi
# themselves. Then users by Apache's AuthType Basic (server.user_param: REMOTE_USER).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Path qw(make_path);
use HTTP::Tiny;
use Time::HiRes qw(time);
use POSIX qw(WNOHANG);
use SvcTest;
use SvcOps;

my $apache = '/usr/sbin/apache2';
plan skip_all => 'apache2 missing (scripts/install-deps installs it)' unless -x $apache;
my $mods = '/usr/lib/apache2/modules';
my $repo = $SvcTest::REPO;
my $token = 'apache-test-token-1';
my $root_user = $> == 0;
my ($wuid, $wgid) = $root_user ? (getpwnam('www-data'))[2, 3] : ($>, $) + 0);
plan skip_all => 'no www-data user to run Apache as' if $root_user && !defined $wuid;

# A home the program (or pool) can write, with a token and a short ping.
sub make_home {
    my $h = SvcTest->make_home("server:\n  api_token: $token\n");
    chmod 0755, $h;
    system('chown', '-R', "$wuid:$wgid", $h) if $root_user;
    return $h;
}

# Start Apache with these modules and this extra text (Defines, then Include of the shipped
# file). Returns {pid, port, dir}.
sub apache {
    my ($name, $modules, $extra, $mpm) = @_;
    $mpm //= 'event';
    my $dir = SvcOps::tmpdir();
    make_path("$dir/logs", "$dir/run", "$dir/htdocs");
    chown $wuid, $wgid, "$dir/run" if $root_user;
    my $port = SvcTest::free_port();
    $extra =~ s/RUNDIR/$dir\/run/g;
    my $load = join '', map { "LoadModule ${_}_module $mods/mod_$_.so\n" } @$modules;
    my $user = $root_user ? "User www-data\nGroup www-data\n" : '';
    SvcTest::write_file("$dir/apache2.conf", <<"EOF");
ServerRoot $dir
ServerName localhost
Listen 127.0.0.1:$port
PidFile $dir/run/httpd.pid
DefaultRuntimeDir $dir/run
Mutex file:$dir/run default
ErrorLog $dir/logs/error.log
LogLevel warn
$user
LoadModule mpm_${mpm}_module $mods/mod_mpm_$mpm.so
LoadModule authz_core_module $mods/mod_authz_core.so
$load
DocumentRoot $dir/htdocs
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory $dir/htdocs>
    Require all granted
</Directory>
$extra
EOF
    my $pid = fork // die;
    if ($pid == 0) {
        setpgrp(0, 0);
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$dir/logs/stdout.log";
        open STDERR, '>>', "$dir/logs/stdout.log";
        $ENV{APACHE_CONFDIR} = $dir;
        exec $apache, '-d', $dir, '-f', "$dir/apache2.conf", '-DFOREGROUND' or POSIX::_exit(127);
    }
    my $up = SvcTest::wait_for(20, sub {
        die "$name: apache exited:\n" . SvcOps::slurp("$dir/logs/stdout.log")
            . SvcOps::slurp("$dir/logs/error.log") if waitpid($pid, WNOHANG) == $pid;
        IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 1) ? 1 : 0;
    });
    die "$name: apache did not start:\n" . SvcOps::slurp("$dir/logs/error.log") unless $up;
    return { pid => $pid, port => $port, dir => $dir };
}

# The black-box checks, as for nginx.
sub checks {
    my ($name, $ap, $home) = @_;
    my $cli = bless { port => $ap->{port}, http => HTTP::Tiny->new(timeout => 60, keep_alive => 0) },
                    'SvcTest';
    my $auth = { authorization => "Bearer $token" };
    my $r = $cli->req(GET => '/api/health');
    is $r->{status}, 200, "$name: health (no token needed)"
        or diag $r->{body}, SvcOps::slurp("$ap->{dir}/logs/error.log");
    $r = $cli->req(GET => '/api/v1/chat/sessions');
    is $r->{status}, 401, "$name: no token: 401";
    is $r->{json} && $r->{json}{error}{code}, 'missing_token', "$name: as JSON";
    $r = $cli->req(GET => '/api/v1/chat/sessions', headers => { authorization => 'Bearer wrong' });
    is $r->{json} && $r->{json}{error}{code}, 'invalid_token', "$name: the Authorization header reaches svc";
    $r = $cli->req(POST => '/api/chat', headers => $auth,
                   body => { session_id => "ap-$name", messages => [{ role => 'user', content => 'hello apache' }] });
    is $r->{status}, 200, "$name: chat";
    like $r->{json}{content} // '', qr/hello apache/, "$name: answered";

    # SSE: the first delta arrives while the run is still going (read the session's status
    # at that moment), then the stream runs to [DONE]
    my $sc = "$home/agents/native_sessions/session_ap-$name-s/svc_session.json";
    my $during;
    my $sse = $cli->sse('/api/chat', headers => $auth, body => {
        session_id => "ap-$name-s", stream => JSON::PP::true,
        messages => [{ role => 'user', content => '/slow 300 one two three four five six' }] },
        stop_if => sub {
            my ($ev) = @_;
            if (!defined $during && grep { ref $_ && ($_->{choices}[0]{delta}{content} // '') =~ /\S/ } @$ev) {
                $during = (SvcTest::read_file($sc) // '') =~ /"status": "running"/ ? 1 : 0;
            }
            return 0;
        });
    is $sse->{status}, 200, "$name: stream 200";
    like $sse->{headers}{'content-type'} // '', qr/text\/event-stream/, "$name: text/event-stream";
    is $during, 1, "$name: the first delta arrived while the run was still running (incremental)";
    is $sse->{events}[-1], '[DONE]', "$name: to [DONE]";
    my $text = join '', map { ref $_ ? $_->{choices}[0]{delta}{content} // '' : '' } @{ $sse->{events} };
    like $text, qr/one two three four five six/, "$name: the whole answer streamed";

    # another host name (DNS rebinding): Apache answers 421 itself, as JSON
    my $reb = `curl -s -i -H 'Host: attacker.example' -H 'Authorization: Bearer $token' http://127.0.0.1:$ap->{port}/api/v1/chat/sessions`;
    like $reb, qr{^HTTP/1\.1 421 }, "$name: Host: attacker.example: 421";
    like $reb, qr{"code":"unknown_host"}, "$name: unknown_host, as JSON";
    unlike $reb, qr{ap-$name}, "$name: no session listed";

    $r = $cli->req(GET => '/api/v1/chat/sessions/a%2Fb', headers => $auth);
    is $r->{status}, 400, "$name: %2F in a session id reaches svc: 400";
    is $r->{json} && $r->{json}{error}{code}, 'invalid_session_id', "$name: as svc's JSON";

    $r = $cli->req(GET => '/api/v1/chat/sessions', headers => $auth);
    my %ids = map { $_->{session_id} => 1 } @{ $r->{json}{sessions} || [] };
    ok $ids{"ap-$name"} && $ids{"ap-$name-s"}, "$name: both sessions listed";

    $r = $cli->req(POST => '/api/chat', headers => $auth, body => 'x' x (1024 * 1024 + 100));
    is $r->{status}, 413, "$name: a body over max_body_bytes: 413";
    is $r->{json} && $r->{json}{error}{code}, 'body_too_large', "$name: as svc's JSON";

    # a Content-Length over Apache's own LimitRequestBody (2 MiB): the CGI module refuses on
    # it alone, before svc runs, with the ErrorDocument; the FastCGI modules pass the request
    # on and svc refuses it (over max_body_bytes) before reading the body. Either way the
    # client gets svc's JSON error object, never Apache's HTML page.
    my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ap->{port}", Timeout => 30)
        or die "connect: $!";
    local $SIG{PIPE} = 'IGNORE';
    print $sock "POST /api/chat HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        . "Authorization: Bearer $token\r\nContent-Length: 3000000\r\nConnection: close\r\n\r\n";
    my $left = 3000000;
    while ($left > 0) {
        my $n = $left < 65536 ? $left : 65536;
        last unless print $sock 'x' x $n;
        $left -= $n;
    }
    local $/;
    my $raw = <$sock> // '';
    close $sock;
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    if (($head // '') =~ /^Transfer-Encoding: chunked/mi) {    # de-chunk
        my $plain = '';
        $body //= "";
        while ($body =~ s/\A([0-9a-fA-F]+)\r\n//) {
            my $n = hex $1;
            last if $n == 0;
            $plain .= substr($body, 0, $n, '');
            $body =~ s/\A\r\n//;
        }
        $body = $plain;
    }
    # mod_fcgid 2.3.9 stops reading at the limit and passes the request on with no body:
    # svc answers 400 invalid_json (nothing runs); see nginx/apache-fcgid.conf
    my ($want, $code) = $name eq 'fcgid' ? (400, 'invalid_json') : (413, 'body_too_large');
    like $head // "", qr{^HTTP/1\.1 $want }, "$name: over LimitRequestBody: $want" or diag $raw;
    like $head // '', qr{^Content-Type: application/json}mi, "$name: that $want is JSON";
    like $head // '', qr{^x-should-retry: false}mi, "$name: with x-should-retry: false";
    my $j = eval { JSON::PP->new->decode($body // '') };
    is $j && $j->{error}{code}, $code, "$name: that $want is svc's error object ($code)" or diag $raw;
}

# ==== mod_proxy_fcgi in front of a pool ====
SKIP: {
    my $sdir = SvcOps::tmpdir();
    my $grp = $root_user ? 'www-data' : (getgrgid($) + 0))[0];
    my $h2 = SvcTest->make_home("server:\n  api_token: $token\n  socket_group: $grp\n");
    chmod 0755, $h2;
    my $pool = SvcOps::pool(home => $h2, sock => "$sdir/p.sock", workers => 2);
    my $ap = apache('proxy_fcgi', [qw(proxy proxy_fcgi setenvif headers alias)],
                    "Define SVC_SOCKET $sdir/p.sock\nInclude $repo/nginx/apache-proxy-fcgi.conf\n");
    checks('proxy_fcgi', $ap, $h2);
    SvcOps::stop_pid($ap->{pid});

    # the file included inside a <VirtualHost> (its other documented place): the same
    # answers, %2F included (AllowEncodedSlashes is then the vhost's)
    $ap = apache('proxy_fcgi-vhost', [qw(proxy proxy_fcgi setenvif headers alias)],
                 "Define SVC_SOCKET $sdir/p.sock\n<VirtualHost *:*>\nServerName localhost\n"
                 . "Include $repo/nginx/apache-proxy-fcgi.conf\n</VirtualHost>\n");
    checks('proxy_fcgi-vhost', $ap, $h2);
    SvcOps::stop_pid($ap->{pid});
    SvcOps::stop_pid($pool->{pid});
}

# ==== users by Apache's AuthType Basic (server.user_param, SPEC 14): docs/OPS.md's example ====
SKIP: {
    skip 'mod_auth_basic missing', 1 unless -f "$mods/mod_auth_basic.so";
    my $sdir = SvcOps::tmpdir();
    my $grp = $root_user ? 'www-data' : (getgrgid($) + 0))[0];
    my $h = SvcTest->make_home("server:\n  user_param: REMOTE_USER\n  admins: [carol]\n"
                               . "  socket_group: $grp\n");
    chmod 0755, $h;
    require Digest::SHA;
    SvcTest::write_file("$sdir/htpasswd", join '', map { "$_:{SHA}" . Digest::SHA::sha1_base64("$_-pw") . "=\n" }
                                                    qw(dave carol erin));
    chmod 0644, "$sdir/htpasswd";
    my $pool = SvcOps::pool(home => $h, sock => "$sdir/p.sock", workers => 2);
    my $ap = apache('users', [qw(proxy proxy_fcgi setenvif headers alias auth_basic authn_file authn_core authz_user)],
                    "Define SVC_SOCKET $sdir/p.sock\nInclude $repo/nginx/apache-proxy-fcgi.conf\n"
                    . "<Location \"/api/\">\n    AuthType Basic\n    AuthName \"svc\"\n"
                    . "    AuthBasicProvider file\n    AuthUserFile $sdir/htpasswd\n"
                    . "    Require valid-user\n</Location>\n"
                    . "<Location \"/api/health\">\n    Require all granted\n</Location>\n");
    my $cli = bless { port => $ap->{port}, http => HTTP::Tiny->new(timeout => 60, keep_alive => 0) },
                    'SvcTest';
    require MIME::Base64;
    my $as = sub { { authorization => 'Basic ' . MIME::Base64::encode_base64("$_[0]:$_[0]-pw", '') } };
    is $cli->req(GET => '/api/health')->{status}, 200, 'users: health needs no password';
    is $cli->req(GET => '/api/v1/chat/sessions')->{status}, 401, 'users: Apache asks for one';
    my $r = $cli->req(POST => '/api/chat', headers => $as->('dave'),
                      body => { session_id => 'dave-1', messages => [{ role => 'user', content => 'hi' }] });
    is $r->{status}, 200, 'users: dave chats' or diag $r->{body};
    is $cli->req(GET => '/api/v1/chat/sessions/dave-1', headers => $as->('dave'))->{json}{user_id}, 'dave',
       'users: REMOTE_USER reaches svc: the session is dave\'s';
    $r = $cli->req(GET => '/api/v1/chat/sessions/dave-1', headers => $as->('erin'));
    is "$r->{status} " . ($r->{json} && $r->{json}{error}{code}), '404 session_not_found',
       'users: missing to erin';
    is $cli->req(GET => '/api/v1/chat/sessions/dave-1', headers => $as->('carol'))->{status}, 200,
       'users: carol (server.admins) sees it';
    is $cli->req(GET => '/api/config', headers => $as->('dave'))->{status}, 403, 'users: config is for admins';
    SvcOps::stop_pid($ap->{pid});
    SvcOps::stop_pid($pool->{pid});
}

# ==== mod_fcgid: Apache runs svc-fcgi ====
SKIP: {
    skip 'mod_fcgid missing (libapache2-mod-fcgid)', 1 unless -f "$mods/mod_fcgid.so";
    my $home = make_home();
    my $bindir = SvcTest::build();
    my $ap = apache('fcgid', [qw(fcgid alias headers)],
        "FcgidIPCDir RUNDIR/fcgid\nFcgidProcessTableFile RUNDIR/fcgid_shm\n"
        . "Define SVC_BIN_DIR $bindir\nDefine SVC_HOME_DIR $home\n"
        . "Include $repo/nginx/apache-fcgid.conf\n");
    checks('fcgid', $ap, $home);
    SvcOps::stop_pid($ap->{pid});
}

# ==== plain CGI (mod_cgid) ====
SKIP: {
    my $home = make_home();
    my $bindir = SvcTest::build();
    my $ap = apache('cgi', [qw(cgid alias env headers)],
        "ScriptSock RUNDIR/cgid.sock\nDefine SVC_BIN_DIR $bindir\nDefine SVC_HOME_DIR $home\n"
        . "Include $repo/nginx/apache-cgi.conf\n");
    checks('cgi', $ap, $home);
    SvcOps::stop_pid($ap->{pid});
}

# ==== plain CGI (mod_cgi, the prefork MPM): it waits for the program's stdout and stderr to
# close, so a listing built in the background (here 3 s late) must hold neither ====
SKIP: {
    skip 'test hooks not built (SVC_TEST_INDEX_BUILD_DELAY)', 1 unless SvcTest::test_hooks_built();
    my $home = make_home();
    my $bindir = SvcTest::build();
    my $ap = apache('cgi-prefork', [qw(cgi alias env headers)],
        "Define SVC_BIN_DIR $bindir\nDefine SVC_HOME_DIR $home\nSetEnv SVC_TEST_INDEX_BUILD_DELAY 3\n"
        . "Include $repo/nginx/apache-cgi.conf\n", 'prefork');
    checks('cgi-prefork', $ap, $home);
    my $cli = bless { port => $ap->{port}, http => HTTP::Tiny->new(timeout => 60) }, 'SvcTest';
    my ($t0, $r, $took);
    unless (SvcTest::cache_off()) {    # caches off: no listing database to build
        unlink glob "$home/search/listing/*";
        $t0 = time;
        $r = $cli->req(GET => '/api/v1/chat/sessions', headers => { authorization => "Bearer $token" });
        $took = time - $t0;
        is_deeply [$r->{status}, $r->{headers}{'x-svc-index'}], [200, 'building'],
            'cgi-prefork: a list while the listing is built in the background';
        ok $took < 2.5, 'cgi-prefork: answered at once, not when the build ended' or diag "took ${took}s";
    }
    $t0 = time;
    $r = $cli->req(POST => '/api/chat/runs', headers => { authorization => "Bearer $token" },
                   body => { session_id => 'ap-run', messages => [{ role => 'user', content => '/slow 1000 a b c d' }] });
    $took = time - $t0;
    is $r->{status}, 202, 'cgi-prefork: a detached run started';
    ok $took < 2.5, 'cgi-prefork: answered at once, not when the run ended' or diag "took ${took}s";
    SvcOps::stop_pid($ap->{pid});
}

done_testing;
