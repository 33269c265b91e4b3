#!/usr/bin/perl
# Stock OpenAI client libraries work against svc unchanged (issue 10): the official `openai`
# client, the Vercel AI SDK (default openai() = Responses API, and openai.chat()) and
# LangChain's ChatOpenAI, driven by t/node/clients.mjs through a real nginx + svc-fcgi; each
# also as an agent with a client-side tool (issue 26), LangChain's against a second svc
# whose `openai` model is t/lib/FakeOpenAI.pm (the model server calls the tool).
# The npm packages (pinned in t/node/package.json and its lock file) are installed here into
# t/node/node_modules (git-ignored) when missing. Each line the script prints becomes a
# test; each archived-session attempt is checked in the server log: one request, not three.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;
use JSON::PP;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $repo = SvcTest->repo;
my $dir = "$repo/t/node";
my $node = `command -v node 2>/dev/null`;
chomp $node;
ok($node, 'node is installed (scripts/install-deps: nodejs)') or BAIL_OUT('no node');
my ($major) = `node --version` =~ /^v(\d+)/;
cmp_ok($major // 0, '>=', 18, 'node 18 or later');

unless (-d "$dir/node_modules/openai" && -d "$dir/node_modules/ai"
        && -d "$dir/node_modules/\@langchain/openai" && -d "$dir/node_modules/\@ai-sdk/openai") {
    my $out = `cd '$dir' && npm ci --no-audit --no-fund --loglevel=error 2>&1`;
    is($?, 0, 'npm ci installed the client packages') or diag($out);
}

my $s = SvcTest->start(workers => 3);
my $base = $s->url('/api/v1');
my $fake = FakeOpenAI->start;
my $oa = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
                        . $fake->base_url . "\n  api_key: sk-test\n");
my $base_oa = $oa->url('/api/v1');
my $raw = `cd '$dir' && SVC_BASE='$base' SVC_BASE_OA='$base_oa' timeout 300 node clients.mjs 2>&1`;
my $rc = $? >> 8;
is($rc, 0, 'node clients.mjs exited 0') or diag($raw);

my (@archived, $ended);
for my $line (split /\n/, $raw) {
    my $o = eval { decode_json($line) };
    unless (ref $o eq 'HASH') {
        diag("node: $line");
        next;
    }
    if (exists $o->{ok}) {
        ok($o->{ok} ? 1 : 0, $o->{name}) or diag($o->{diag});
    } elsif ($o->{archived}) {
        push @archived, $o;
    } elsif ($o->{end}) {
        $ended = 1;
    }
}
ok($ended, 'the client script ran to its end');
is(scalar @archived, 4, 'four clients tried an archived session');

# one request per archived attempt: no client retried the 403
my $log = $s->log;
for my $x (@archived) {
    my $sid = quotemeta $x->{session_id};
    my @hits = grep { m{ POST /api/v1/(?:chat/completions|responses) (\d+) .* sid=$sid\b} && $1 != 200 }
               split /\n/, $log;
    is(scalar @hits, 1, "$x->{archived}: the archived session saw one request, not three")
        or diag(join "\n", @hits);
    like($hits[0] // '', qr/ 403 /, "$x->{archived}: answered 403");
}

# the LangChain agent's tool reached the model server beside svc's own, and its result too
my @tooled = grep { ref $_->{body} eq 'HASH' && grep { ($_->{function}{name} // '') eq 'get_weather' } @{ $_->{body}{tools} || [] } }
             @{ $fake->requests };
is(scalar @tooled, 2, 'the model server was offered the client tool in both LangChain requests');
ok((grep { ($_->{role} // '') eq 'tool' } @{ $tooled[-1]{body}{messages} || [] }), 'and was sent its result');
$oa->stop;
$fake->stop;
$s->stop;
done_testing;
