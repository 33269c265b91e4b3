#!/usr/bin/perl
# The dashboard (nginx/dashboard/) in a real browser: Debian's chromium driven by npm
# playwright-core (installed here into t/node/browser/node_modules when missing) through
# nginx + svc-fcgi started by t/lib/SvcTest.pm. The browser script t/node/browser/
# dashboard.mjs reports one JSON line per check; each becomes a TAP test here.
# Screenshots go to build/ (dashboard-*.png).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;
use SvcOps;
use FakeOpenAI;

my $REPO = SvcTest->repo;
my $dir = "$REPO/t/node/browser";
my $chromium = '/usr/bin/chromium';

plan skip_all => "$chromium not installed (scripts/install-deps installs it)" unless -x $chromium;
my ($node) = grep { -x } map { "$_/node" } split /:/, $ENV{PATH} // "";
plan skip_all => 'node not installed (scripts/install-deps installs it)' unless $node;

# playwright-core, pinned in package.json/package-lock.json, into a git-ignored folder.
unless (-f "$dir/node_modules/playwright-core/package.json") {
    my $out = `cd '$dir' && npm install --no-audit --no-fund 2>&1`;
    if ($? != 0) {
        fail "npm install --no-audit --no-fund in $dir";
        diag $out;
        done_testing;
        exit 1;
    }
}

my $shots = SvcTest->build . '/dashboard';

# Run the browser script; turn its JSON lines into tests. Returns the number of checks.
sub browse {
    my ($s, @extra) = @_;
    my $base = ref $s ? $s->url : $s; # a started SvcTest, or a URL
    my @cmd = ($node, "$dir/dashboard.mjs", '--base', $base, '--shots', $shots, @extra);
    open my $fh, '-|', @cmd or die "run node: $!";
    my ($n, $done) = (0, 0);
    while (my $line = <$fh>) {
        chomp $line;
        my $r = eval { decode_json($line) };
        unless ($r) { diag "browser: $line"; next }
        if ($r->{done}) { $done = 1; next }
        $n++;
        if (defined $r->{skip}) {
            SKIP: { skip $r->{skip}, 1 }
            next;
        }
        ok $r->{ok}, $r->{name} or diag $r->{diag} // '';
    }
    close $fh;
    is $?, 0, 'browser script exited 0';
    ok $done, 'browser script reported every step';
    return $n;
}

{
    my $s = SvcTest->start(config => "server:\n  workers: 3\n", workers => 3);
    # The page is served at / by the shipped snippet, with a CSP and module MIME types.
    my $r = $s->req(GET => '/');
    is $r->{status}, 200, 'GET / serves the dashboard';
    like $r->{body}, qr{<script type="module" src="app.js"></script>}, 'index.html';
    like $r->{headers}{'content-security-policy'} // '', qr/script-src 'self'/, 'with a Content-Security-Policy';
    $r = $s->req(GET => '/app.js');
    like $r->{headers}{'content-type'} // '', qr{^text/javascript}, 'modules served as text/javascript';
    for my $p ('/svc.conf', '/%2e%2e/svc.conf', '/..%2fsvc.conf', '/dashboard/index.html') {
        $r = $s->req(GET => $p);
        ok $r->{status} == 404 || $r->{status} == 400, "GET $p: nothing outside the dashboard directory ($r->{status})";
    }
    $r = $s->req(GET => '/api/nope');
    is $r->{json}{error}{code}, 'not_found', '/api/ still answered by svc';

    my $n = browse($s, '--root', $s->root);
    cmp_ok $n, '>=', 60, "the browser made its checks ($n)";
    ok -s "$shots/$_.png", "screenshot build/dashboard/$_.png"
        for qw(dashboard-landing dashboard-list dashboard-transcript dashboard-chat dashboard-markdown
               dashboard-markdown-dark dashboard-phone-list-dark dashboard-feedback dashboard-feedback-dark dashboard-history
               dashboard-search dashboard-search-dark dashboard-search-open);

    # What the browser did is on disk.
    $r = $s->req(GET => '/api/v1/chat/sessions?include_archived=true&limit=50');
    my @titles = map { $_->{title} } @{ $r->{json}{sessions} };
    ok((grep { $_ eq 'Renamed by the browser' } @titles), 'the renamed session is listed by the API');
    $s->stop;
}

{
    my $token = 'dash-T0ken-' . $$;
    my $s = SvcTest->start(config => "server:\n  api_token: \"$token\"\n");
    browse($s, '--token', $token);
    $s->stop;
    unlike $s->log, qr/\Q$token\E/, 'token never in the logs';
}

# server.users: who is signed in, sign-out, the owner column for admins.
{
    my %tok = (alice => 'dash-alice-' . $$, root => 'dash-root-' . $$);
    my $s = SvcTest->start(env => { TOK_ALICE => $tok{alice}, TOK_ROOT => $tok{root} },
                           config => "server:\n  users:\n    - {id: alice, token_env: TOK_ALICE}\n"
                                   . "    - {id: root, token_env: TOK_ROOT, role: admin}\n");
    browse($s, '--mode', 'users', '--user-token', $tok{alice}, '--admin-token', $tok{root});
    ok -s "$shots/dashboard-users.png", 'screenshot build/dashboard/dashboard-users.png';
    $s->stop;
}

{
    my $fake = FakeOpenAI->start;
    my $s = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
                           . $fake->base_url . "\n  api_key: sk-dash-SECRET\n  max_retries: 0\n  timeout_s: 10\n");
    browse($s, '--mode', 'upstream');
    $s->stop;
    $fake->stop;
}

# Under a prefix: the two lines of nginx/svc.conf its comment says to edit, and nothing else.
{
    my $tmp = SvcOps::tmpdir();
    my $p = SvcOps::pool(home => SvcTest->make_home(''), sock => "$tmp/p.sock", workers => 2);
    my $n = SvcOps::nginx(dir => "$tmp/ngx", upstream => "server unix:$tmp/p.sock;",
                          edit => sub { SvcOps::edit_prefix_mount($_[0]) });
    browse("http://127.0.0.1:$n->{port}/svc", '--mode', 'prefix');
    SvcOps::stop_pid($n->{pid});
    SvcOps::stop_pid($p->{pid});
}

done_testing;
