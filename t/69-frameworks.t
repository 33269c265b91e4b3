#!/usr/bin/perl
# Agent frameworks work against svc unchanged (SPEC 15, issue 37): the OpenAI Agents SDK
# (tools, outputType, streaming, previousResponseId, a Conversations session), LangGraph's
# createReactAgent on @langchain/openai (a tool and responseFormat), the Vercel AI SDK
# (generateText / streamText with tools and Output.object, Responses and chat providers,
# multi-turn) and Mastra, driven by t/node/agents/frameworks.mjs through nginx + svc-fcgi,
# against the echo model and against t/lib/FakeOpenAI.pm behind the `openai` provider: what
# reached the model is checked in the fake's log. The packages (pinned in
# t/node/agents/package.json and its lock file) are installed into its git-ignored
# node_modules when missing.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;
use JSON::PP;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
$ENV{OPENAI_AGENTS_DISABLE_TRACING} = 1;
$ENV{MASTRA_TELEMETRY_DISABLED} = 1;

my $dir = SvcTest->repo . '/t/node/agents';
chomp(my $node = `command -v node 2>/dev/null`);
ok($node, 'node is installed (scripts/install-deps: nodejs)') or BAIL_OUT('no node');
unless (-d "$dir/node_modules/\@openai/agents" && -d "$dir/node_modules/\@langchain/langgraph"
        && -d "$dir/node_modules/ai" && -d "$dir/node_modules/\@mastra/core") {
    my $out = `cd '$dir' && npm ci --no-audit --no-fund --loglevel=error 2>&1`;
    is($?, 0, 'npm ci installed the framework packages') or diag($out);
}

my $s = SvcTest->start(workers => 3);
my $fake = FakeOpenAI->start;
my $oa = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
                        . $fake->base_url . "\n  api_key: sk-test\n");

# LangGraph on the openai provider: the model calls the tool, answers, then is asked for the
# structured response (its responseFormat as a forced function or a response format)
my $lg = '/tool get_weather {"city":"Bern"}';
$fake->script({ when => $lg, tool_calls => [{ name => 'get_weather', arguments => '{"city":"Bern"}' }] },
              { when => $lg, content => 'It is sunny in Bern.' },
              { when => $lg, content => '{"city":"Bern","sky":"sunny"}' });

# the Agents SDK's outputType and the AI SDK's Output.object on the openai provider: the
# model server answers in the format it was asked for (what it was sent is checked below)
$fake->script({ when => 'format please', content => '{"city":"Paris","sky":"scripted"}' }) for 1 .. 2;

my %notes;
my $raw = `cd '$dir' && SVC_BASE='${\ $s->url('/api/v1')}' SVC_BASE_OA='${\ $oa->url('/api/v1')}' timeout 300 node frameworks.mjs 2>&1`;
is($? >> 8, 0, 'node frameworks.mjs exited 0') or diag($raw);
my $ended;
for my $line (split /\n/, $raw) {
    my $o = eval { decode_json($line) };
    if (ref $o ne 'HASH') { diag("node: $line"); next }
    if (exists $o->{ok}) { ok($o->{ok} ? 1 : 0, $o->{name}) or diag($o->{diag}) }
    elsif ($o->{note}) { push @{ $notes{ $o->{note} } }, $o; diag("$o->{part}: $o->{ms} ms") if $o->{note} eq 'time' }
    elsif ($o->{end}) { $ended = 1 }
}
ok($ended, 'the framework script ran to its end');
is($notes{langgraph_sessions}[0]{count}, 1,
   'LangGraph: one ReAct run with a tool leaves one session (sessions.continue_stateless)');

# what reached the model server
my @all = grep { ref $_->{body} eq 'HASH' } @{ $fake->requests };
my @fmt = grep { ($_->{body}{messages}[-1]{content} // '') eq 'format please' } @all;
is(scalar @fmt, 2, 'the Agents SDK and the AI SDK each asked the model server once');
for my $q (@fmt) {
    my $rf = $q->{body}{response_format} // {};
    is($rf->{type}, 'json_schema', 'their format reached the model server as response_format');
    is_deeply([sort keys %{ $rf->{json_schema}{schema}{properties} // {} }], [qw(city sky)],
              '... with their schema');
}
# LangGraph through svc
my @reqs = grep { ($_->{body}{messages}[-1]{content} // '') ne 'format please' } @all;
cmp_ok(scalar @reqs, '>=', 3, 'LangGraph: three model calls reached the model server');
my ($second) = grep { (grep { ($_->{role} // '') eq 'tool' } @{ $_->{body}{messages} }) } @reqs;
ok($second, 'LangGraph: the tool result reached the model server');
my $last = $reqs[-1]{body};
my @roles = map { $_->{role} } @{ $last->{messages} };
is_deeply([grep { $_ ne 'system' } @roles], [qw(user assistant tool assistant)],
    'LangGraph: the structured-output call carried the whole list (user, call, result, answer)')
    or diag(explain \@roles);
ok($last->{response_format} || $last->{tool_choice},
    'LangGraph: its responseFormat reached the model server (response_format or a forced tool)')
    or diag(explain $last);

$oa->stop;
$fake->stop;
$s->stop;
done_testing;
