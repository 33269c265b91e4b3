#!/usr/bin/perl
# The FastCGI port accepts only the web servers it should (SPEC 19, issue 35 item 2): a raw
# FastCGI client (t/lib/FcgiClient.pm, the source address chosen) from outside
# server.fcgi_allow is closed before svc reads a byte; inside it is served; the default on
# TCP is loopback only; FCGI_WEB_SERVER_ADDRS is still honoured (IPv6 too); a unix socket
# ignores the list (its mode guards it); server.user_param on a TCP listener without a list
# refuses to start and to reload; a server without token or users says so at start when
# peers beyond loopback may connect, and in GET /api/health for a request that came through
# an address beyond loopback.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;
use SvcOps;
use FcgiClient;

my $J = JSON::PP->new->utf8;
my $dir = SvcOps::tmpdir();
my $home = SvcTest->make_home('');

# Start a pool on $listen with agents.yaml $yaml (and env); returns (pool, "HOST:PORT").
my $n = 0;
sub pool_with {
    my ($yaml, $listen, %env) = @_;
    $n++;
    SvcTest::write_file("$dir/c$n.yaml", SvcTest::with_defaults($yaml));
    my $p = SvcOps::pool(home => $home, listen => $listen, config => "$dir/c$n.yaml",
                         log => "$dir/p$n.log", workers => 1, env => \%env);
    return $p;
}
sub health {
    my ($to, $from, %params) = @_;
    return FcgiClient::request(to => $to, from => $from,
                               params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health',
                                           %params });
}

# ---- an explicit list: 127.0.0.1/32; 127.0.0.2 (loopback, but not in it) gets nothing ----
{
    my $port = SvcTest::free_port();
    my $p = pool_with("server:\n  fcgi_allow: [127.0.0.1/32]\n", "tcp:127.0.0.1:$port");
    is health("127.0.0.1:$port", '127.0.0.1')->{status}, 200, 'fcgi_allow 127.0.0.1/32: 127.0.0.1 served';
    unlike SvcOps::slurp($p->{log}), qr/fcgi_allow is empty/, 'a list given: no such line';
    my $r = health("127.0.0.1:$port", '127.0.0.2');
    ok $r->{closed} && $r->{bytes} == 0, 'from 127.0.0.2: closed, not a byte answered' or diag explain $r;
    ok FcgiClient::closed_unread(to => "127.0.0.1:$port", from => '127.0.0.2'),
       'from 127.0.0.2: closed at once, before anything was sent (nothing read)';
    ok !FcgiClient::closed_unread(to => "127.0.0.1:$port", from => '127.0.0.1', wait => 0.5),
       'from 127.0.0.1: the connection waits for its request';
    # a raw client that names a user of its own choosing gets nothing either
    $r = FcgiClient::request(to => "127.0.0.1:$port", from => '127.0.0.2',
                             params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/config',
                                         REMOTE_USER => 'ops' });
    ok $r->{closed}, 'a refused peer never reaches a route';
    like SvcOps::slurp($p->{log}), qr/refused a FastCGI connection from 127\.0\.0\.2: not in server\.fcgi_allow/,
         'the refusal is logged with the peer';
    SvcOps::stop_pid($p->{pid});
}

# ---- the default on TCP: loopback only ----
my ($ext) = grep { !/^127\./ && /^\d+\.\d+\.\d+\.\d+$/ } split ' ', `hostname -I 2>/dev/null`;
SKIP: {
    skip 'no IPv4 address beyond loopback on this machine', 4 unless $ext;
    my $port = SvcTest::free_port();
    my $p = pool_with('', "tcp:*:$port");
    is health("127.0.0.1:$port", '127.0.0.2')->{status}, 200, 'default list: 127.0.0.2 (loopback) served';
    my $r = health("$ext:$port", $ext);
    ok $r->{closed} && $r->{bytes} == 0, "default list: $ext (this host's own, beyond loopback) refused";
    unlike SvcOps::slurp($p->{log}), qr/WARNING/, 'no warning: nothing beyond loopback may connect';
    like SvcOps::slurp($p->{log}), qr/server\.fcgi_allow is empty: this TCP listener takes loopback peers only/,
         'tcp:* without a list: the log says only loopback peers are taken';
    SvcOps::stop_pid($p->{pid});
}

# ---- IPv6 peers; FCGI_WEB_SERVER_ADDRS honoured, with IPv6 now ----
SKIP: {
    skip 'no IPv6 loopback', 4 unless IO::Socket::IP->new(LocalHost => '::1', Listen => 1);
    my $port = SvcTest::free_port();
    my $p = pool_with("server:\n  fcgi_allow: [127.0.0.1/32]\n", "tcp:[::1]:$port");
    ok health("[::1]:$port", '::1')->{closed}, 'an IPv6 peer outside an IPv4 list: refused';
    SvcOps::stop_pid($p->{pid});
    $p = pool_with("server:\n  fcgi_allow: ['::1']\n", "tcp:[::1]:$port");
    is health("[::1]:$port", '::1')->{status}, 200, 'fcgi_allow [::1]: ::1 served';
    SvcOps::stop_pid($p->{pid});
    $port = SvcTest::free_port();
    $p = pool_with('', "tcp:127.0.0.1:$port", FCGI_WEB_SERVER_ADDRS => '127.0.0.3,::1');
    is health("127.0.0.1:$port", '127.0.0.3')->{status}, 200, 'FCGI_WEB_SERVER_ADDRS=127.0.0.3,::1: 127.0.0.3 served';
    ok health("127.0.0.1:$port", '127.0.0.1')->{closed}, 'and 127.0.0.1 refused: the variable is the list';
    SvcOps::stop_pid($p->{pid});
}
{
    my ($rc, $err) = SvcOps::run_fcgi({ SVC_HOME => $home, FCGI_WEB_SERVER_ADDRS => 'web.example.org' },
                                      '--listen', 'tcp:127.0.0.1:' . SvcTest::free_port());
    is $rc, 3, 'FCGI_WEB_SERVER_ADDRS with a name: refused at start (exit 3)';
    like $err, qr/FCGI_WEB_SERVER_ADDRS: 'web\.example\.org' is not an IPv4 or IPv6 address/, 'naming the entry';
}

# ---- a unix socket: its mode guards it, the list is not used ----
{
    my $p = pool_with("server:\n  fcgi_allow: [10.9.9.9]\n", "unix:$dir/u.sock");
    is health("$dir/u.sock")->{status}, 200, 'unix socket: served whatever the list says';
    like SvcOps::slurp($p->{log}), qr/server\.fcgi_allow: not used on a unix socket/, 'and the log says the list is not used';
    SvcOps::stop_pid($p->{pid});
}

# ---- a bad entry is refused by the configuration check ----
{
    SvcTest::write_file("$dir/bad.yaml", "server:\n  fcgi_allow: [10.0.0.0/33]\n");
    my ($rc, $err) = SvcOps::run_fcgi({ SVC_HOME => $home }, '--config', "$dir/bad.yaml",
                                      '--listen', 'tcp:127.0.0.1:' . SvcTest::free_port());
    is $rc, 3, 'fcgi_allow: [10.0.0.0/33] refused (exit 3)';
    like $err, qr/server\.fcgi_allow\[0\]: the prefix length after '\/' must be 0\.\.32/, 'naming the entry and why';
}

# ---- server.user_param on TCP: refused without a list, at start and on reload ----
{
    SvcTest::write_file("$dir/up.yaml", "server:\n  user_param: REMOTE_USER\n  admins: [ops]\n");
    my ($rc, $err) = SvcOps::run_fcgi({ SVC_HOME => $home }, '--config', "$dir/up.yaml",
                                      '--listen', 'tcp:127.0.0.1:' . SvcTest::free_port());
    is $rc, 3, 'user_param on a TCP listener without fcgi_allow: refuses to start (exit 3)';
    like $err, qr/server\.user_param: refusing to start: on a TCP listener any process that reaches the port could send REMOTE_USER and act as any user; list the web servers' addresses in server\.fcgi_allow/,
         'the message says why and what to do';

    my $port = SvcTest::free_port();
    my $p = pool_with("server:\n  user_param: REMOTE_USER\n  admins: [ops]\n  fcgi_allow: [127.0.0.1]\n",
                      "tcp:127.0.0.1:$port");
    my $r = FcgiClient::request(to => "127.0.0.1:$port", from => '127.0.0.1',
                                params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/me',
                                            REMOTE_USER => 'ops' });
    is eval { $J->decode($r->{body})->{admin} }, JSON::PP::true, 'with a list: the web server (a listed peer) names the user';
    ok health("127.0.0.1:$port", '127.0.0.2')->{closed}, 'and a peer outside it cannot';
    SvcOps::stop_pid($p->{pid});

    # a unix socket needs no list
    $p = pool_with("server:\n  user_param: REMOTE_USER\n", "unix:$dir/up.sock");
    is health("$dir/up.sock")->{status}, 200, 'user_param on a unix socket starts';
    SvcOps::stop_pid($p->{pid});

    # reload into user_param without a list: refused, the old configuration goes on
    $port = SvcTest::free_port();
    $p = pool_with('', "tcp:127.0.0.1:$port");
    SvcTest::write_file("$dir/c$n.yaml", SvcTest::with_defaults("server:\n  user_param: REMOTE_USER\n"));
    kill 'HUP', $p->{pid};
    ok SvcTest::wait_for(10, sub { SvcOps::slurp($p->{log}) =~ /reload refused/ }), 'SIGHUP: reload refused';
    like SvcOps::slurp($p->{log}), qr/server\.user_param: refusing/, 'saying why';
    $r = FcgiClient::request(to => "127.0.0.1:$port", from => '127.0.0.1',
                             params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/me',
                                         REMOTE_USER => 'someone' });
    is eval { $J->decode($r->{body})->{users} }, JSON::PP::false, 'the old configuration serves on (no users)';
    SvcOps::stop_pid($p->{pid});
}

# ---- no token, no users: said at start when peers beyond loopback may connect, and in health ----
{
    my $port = SvcTest::free_port();
    my $p = pool_with("server:\n  fcgi_allow: [127.0.0.1, 10.0.0.0/8]\n", "tcp:127.0.0.1:$port");
    like SvcOps::slurp($p->{log}), qr/WARNING: no server\.api_token and no users, and server\.fcgi_allow admits peers beyond loopback/,
         'start: the warning';
    my $h = health("127.0.0.1:$port", '127.0.0.1', REMOTE_ADDR => '127.0.0.1', SERVER_ADDR => '127.0.0.1');
    my $j = eval { $J->decode($h->{body}) } || {};
    is_deeply $j->{warnings} // [], [], 'health through loopback: no warning';
    $h = health("127.0.0.1:$port", '127.0.0.1', REMOTE_ADDR => '203.0.113.7', SERVER_ADDR => '192.0.2.10');
    $j = eval { $J->decode($h->{body}) } || {};
    is $h->{status}, 200, 'health through a public address: still 200';
    like join(' ', @{ $j->{warnings} || [] }), qr/no token and no users.*reachable beyond loopback/,
         'health through a public address: the warning' or diag $h->{body};
    SvcOps::stop_pid($p->{pid});

    $p = pool_with("server:\n  fcgi_allow: [10.0.0.0/8]\n", "tcp:127.0.0.1:$port", SVC_API_TOKEN => 't0k');
    unlike SvcOps::slurp($p->{log}), qr/WARNING/, 'with a token: no warning at start';
    SvcOps::stop_pid($p->{pid});
}

done_testing;
