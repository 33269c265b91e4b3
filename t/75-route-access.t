#!/usr/bin/perl
# Authorization decided once (cgi/access.h): every row of the route table names its access
# rule, and the router checks it before the handler runs. A variant of cgi/routes.c with one
# more route that names no rule is compiled against the test build: written positionally it
# does not compile; written with designated initializers it compiles, and svc-fcgi (run as
# plain CGI) refuses to serve it, never running its handler (h_me, which answers 200).
# Then, through nginx with two users: an Idempotency-Key of POST /api/chat/runs never
# replays another user's session (core/runs.c asks the same visibility check).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp qw(tempdir);
use SvcTest;

my $build = SvcTest::build();
my $repo = SvcTest::repo();
plan skip_all => "$build/svc-fcgi not built" unless -x "$build/svc-fcgi" && -e "$build/libsvccore.a";
my $J = $SvcTest::JSON;
my $dir = tempdir('svc-access-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# The compiler, flags and libraries the build used, from the Makefile itself (CC, CFLAGS,
# SAN and LDFLAGS come through the environment under `make asan`).
my $hooks = SvcTest::test_hooks_built() ? 1 : '';
my $rule = q{svc-link-flags: ; @echo '$(CC)|$(ALL_CFLAGS)|$(LDFLAGS)|$(LDLIBS)'};
my $flags = do {
    local @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL)};
    delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL)};
    open my $mk, '-|', 'make', '-s', '--no-print-directory', '-C', $repo, "B=$build",
        "TEST_HOOKS=$hooks", "--eval=$rule", 'svc-link-flags' or die "make: $!";
    local $/;
    <$mk> // '';
};
chomp $flags;
my ($cc, $cflags, $ldflags, $ldlibs) = split /\|/, $flags;
ok $cc && $cflags =~ /-Werror/, "the build's flags: $cc ...";

my $routes = SvcTest::read_file("$repo/cgi/routes.c");
sub variant {
    my ($name, $row) = @_;
    my $src = $routes;
    ok $src =~ s/(static const struct route routes\[\] = \{\n)/$1    $row,\n/, "$name: a row added";
    SvcTest::write_file("$dir/$name.c", $src);
    my $out = `$cc $cflags -Icgi -c '$dir/$name.c' -o '$dir/$name.o' 2>&1`;
    return ($? == 0, $out);
}

# a row without the column, as every row is written: the build fails on it
my ($built, $out) = variant('positional', '{"GET", "/api/unchecked", h_me}');
ok !$built, 'a positional row without its access rule does not compile';
like $out, qr/positional\.c:\d+.*(int-conversion|incompatible|makes integer from pointer)/,
    'the compiler names the row' or diag $out;

# a row with designated initializers and no rule compiles, and is not served
($built, $out) = variant('designated', '{.method = "GET", .pattern = "/api/unchecked", .fn = h_me}');
ok $built, 'a designated row without its rule compiles' or diag $out;
my @cgi = grep { !m{/routes\.o$} } glob("$build/cgi/*.o");
my $bin = "$dir/svc-fcgi";
$out = `$cc $cflags $ldflags -o '$bin' '$dir/designated.o' @cgi '$build/libsvccore.a' $ldlibs 2>&1`;
ok $? == 0 && -x $bin, 'the variant links' or diag $out;

sub cgi_get {
    my ($path) = @_;
    my $home = SvcTest->make_home('');
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        delete @ENV{grep { /^(REQUEST_|CONTENT_|QUERY_|HTTP_|SVC_)/ } keys %ENV};
        @ENV{qw(SVC_HOME GATEWAY_INTERFACE REQUEST_METHOD REQUEST_URI QUERY_STRING)} =
            ($home, 'CGI/1.1', 'GET', $path, '');
        open STDIN, '<', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec $bin or POSIX::_exit(127);
    }
    local $/;
    my $resp = <$fh>;
    close $fh;
    my ($head, $body) = split /\r?\n\r?\n/, $resp // '', 2;
    my ($status) = ($head // '') =~ /^Status:\s*(\d+)/mi;
    return ($status // 0, eval { $J->decode($body) } || {});
}

my ($st, $body) = cgi_get('/api/me');
is $st, 200, 'the variant serves a route that names its rule (GET /api/me)';
($st, $body) = cgi_get('/api/unchecked');
is $st, 500, 'the route without a rule is refused: 500';
is $body->{error}{code}, 'internal_error', 'internal_error';
like $body->{error}{message}, qr/no access rule/, 'the message says why';
ok !exists $body->{user} && !exists $body->{admin}, "its handler (h_me) did not run";

# ---- an Idempotency-Key of an asynchronous run is not replayed to another user ----
my %TOK = (alice => 'tok-alice-Acc3ss-0001', bob => 'tok-bob-Acc3ss-0002');
my $s = SvcTest->start(env => { TA => $TOK{alice}, TB => $TOK{bob} },
                       config => "server: {users: [{id: alice, token_env: TA}, {id: bob, token_env: TB}]}\n");
sub run_as {
    my ($who, $sid, $key) = @_;
    return $s->req(POST => '/api/chat/runs',
                   headers => { authorization => "Bearer $TOK{$who}", 'idempotency-key' => $key },
                   body => { session_id => $sid, messages => [{ role => 'user', content => 'hi' }] });
}
my $a1 = run_as(alice => 'acc-alice', 'key-1');
is $a1->{status}, 202, 'alice starts a run with a key';
SvcTest::wait_for(15, sub {
    my $r = $s->req(GET => "/api/chat/runs/$a1->{json}{run_id}",
                    headers => { authorization => "Bearer $TOK{alice}" });
    ($r->{json}{status} // 'running') ne 'running';
});
my $again = run_as(alice => 'acc-alice', 'key-1');
is $again->{json}{run_id}, $a1->{json}{run_id}, 'her key replays her run';
my $b1 = run_as(bob => 'acc-alice', 'key-1');
(my $m1 = $b1->{json}{error}{message} // '') =~ s/acc-alice/ID/;
is "$b1->{status} " . ($b1->{json}{error}{code} // '') . " $m1", '404 session_not_found session ID not found',
    "bob with alice's session and her key: as a missing session";
ok !$b1->{headers}{'idempotent-replayed'}, 'nothing replayed';

done_testing;
