#!/usr/bin/perl
# SPEC 17 without the Strands SDK (which CI cannot install): sessions laid out by Python's
# json exactly as the real SDK writes them (the shapes t/76 and t/77 see it write: a
# SummarizingConversationManager's state, an interrupt raised by a hook with one result
# already in, a Swarm's and a Graph's multi_agent.json, messages appended past svc's
# sidecar, big numbers), then svc takes a turn with an `openai` provider
# (t/lib/FakeOpenAI.pm) and the files, the model request, the detail and fsck are checked.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp ();
use SvcTest;
use SvcCliTest ();
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
my $J = $SvcTest::JSON;
my $fake = FakeOpenAI->start;
my $s = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: k\n");
my $root = $s->root;
my $cli = { home => $s->home };
my $TS = '2026-01-02T03:04:05.123456+00:00';

# Lay a session out with Python's json, as Strands' FileSessionManager writes it. agent:
# agent.json's variable part (state, conversation_manager_state, interrupt_state); multi:
# {id => state} for multi_agents/.
sub lay {
    my ($sid, $messages, %o) = @_;
    my $spec = { root => $root, sid => $sid, messages => $messages, ts => $TS,
                 state => $o{state} // {}, cm => $o{cm}, is => $o{is}, multi => $o{multi} // {},
                 state_text => $o{state_text} };
    SvcCliTest::py(<<'PY', $J->encode($spec));
import json, os, sys
s = json.loads(sys.argv[1])
def dump(path, obj, text=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text if text is not None else json.dumps(obj, indent=2, ensure_ascii=False))
sdir = os.path.join(s['root'], 'session_' + s['sid'])
adir = os.path.join(sdir, 'agents', 'agent_svc-agent')
os.makedirs(os.path.join(sdir, 'multi_agents'), exist_ok=True)
dump(os.path.join(sdir, 'session.json'), {'session_id': s['sid'], 'session_type': 'AGENT',
     'created_at': s['ts'], 'updated_at': s['ts']})
agent = {'agent_id': 'svc-agent', 'state': s['state'],
         'conversation_manager_state': s['cm'] or {'__name__': 'SlidingWindowConversationManager',
                                                   'removed_message_count': 0, 'model_call_count': 0},
         '_internal_state': {'interrupt_state': s['is'] or {'interrupts': {}, 'context': {}, 'activated': False},
                             'model_state': {}},
         'created_at': s['ts'], 'updated_at': s['ts']}
text = json.dumps(agent, indent=2, ensure_ascii=False)
if s['state_text']:  # numbers as another writer wrote them
    text = text.replace('"state": {}', '"state": ' + s['state_text'])
dump(os.path.join(adir, 'agent.json'), None, text)
for i, m in enumerate(s['messages']):
    dump(os.path.join(adir, 'messages', 'message_%d.json' % i),
         {'message': m, 'message_id': i, 'redact_message': None, 'created_at': s['ts'], 'updated_at': s['ts']})
for mid, state in s['multi'].items():
    dump(os.path.join(sdir, 'multi_agents', 'multi_agent_' + mid, 'multi_agent.json'), state)
PY
}
sub ut { { role => 'user', content => [{ text => $_[0] }] } }
sub at { { role => 'assistant', content => [{ text => $_[0] }] } }
sub adir { "$root/session_$_[0]/agents/agent_svc-agent" }
sub agent_json { $J->decode(SvcTest::read_file(adir($_[0]) . '/agent.json')) }
sub message { $J->decode(SvcTest::read_file(adir($_[0]) . "/messages/message_$_[1].json"))->{message} }
sub chat {
    my ($sid, @msgs) = @_;
    my $r = $s->req(POST => '/api/v1/chat/completions', body => { session_id => $sid, messages => \@msgs });
    is $r->{status}, 200, "svc turn on $sid" or diag $r->{body};
    return $r;
}
sub model_messages { my @r = grep { ref $_->{body}{messages} } @{ $fake->requests }; [grep { $_->{role} ne 'system' } @{ $r[-1]{body}{messages} }] }
sub fsck_clean {
    my $r = SvcCliTest::svc($cli, 'fsck', '--json');
    is $r->{rc}, 0, "fsck clean $_[0]" or diag $r->{out};
}

# ---- a summarized session: the summary first, removed_message_count honoured ----
{
    my $summary = { role => 'user', content => [{ text => 'SUMMARY of 4 messages: q0 / a0 / q1 / a1' }] };
    lay('sum', [map { $_ % 2 ? at("a$_") : ut("q$_") } 0 .. 7],
        cm => { summary_message => $summary, __name__ => 'SummarizingConversationManager', removed_message_count => 4 });
    my $before = SvcTest::read_file(adir('sum') . '/agent.json');
    $fake->clear;
    chat('sum', { role => 'user', content => 'next' });
    my $mm = model_messages();
    is $mm->[0]{content}, 'SUMMARY of 4 messages: q0 / a0 / q1 / a1', 'the summary reaches the model first';
    is $mm->[1]{content}, 'q4', 'then message 4 (removed_message_count)';
    is scalar(@$mm), 1 + 4 + 1, 'summary, messages 4..7, the input';
    my $after = SvcTest::read_file(adir('sum') . '/agent.json');
    (my $b = $before) =~ s/"updated_at": "[^"]*"//;
    (my $a = $after) =~ s/"updated_at": "[^"]*"//;
    is $a, $b, "agent.json byte for byte but updated_at: Strands' state, no key added";
    fsck_clean('on the summarized session');
}

# ---- an interrupt declined through svc, and one answered ----
for my $how ('decline', 'answer') {
    my $sid = "intr-$how";
    my $call = { role => 'assistant', content => [
        { toolUse => { toolUseId => 'c0', name => 'lookup', input => { key => 'a' } } },
        { toolUse => { toolUseId => 'c1', name => 'dangerous', input => { target => 'db' } } }] };
    my $done = { toolUseId => 'c0', status => 'success', content => [{ text => 'value-of-a' }] };
    my $iid = 'v1:before_tool_call:c1:513885b1-6be1-55b4-b5c2-e456ade7ae27';
    lay($sid, [ut('do it'), $call], state => { keep => 'me' }, is => {
        interrupts => { $iid => { id => $iid, name => 'approve', reason => { why => 'delete' }, response => undef } },
        context => { tool_use_message => $call, tool_results => [$done] }, activated => JSON::PP::true });
    my $d = $s->req(GET => "/api/v1/chat/sessions/$sid")->{json};
    is_deeply $d->{interrupts}, [{ id => $iid, name => 'approve', reason => { why => 'delete' },
                                   tool_use_id => 'c1', tool => 'dangerous' }], "$how: the detail shows the interrupt";
    fsck_clean("$how: pending");
    if ($how eq 'decline') {
        chat($sid, { role => 'user', content => 'no' });
    } else {
        chat($sid, { role => 'tool', tool_call_id => 'c1', content => 'done by hand' });
    }
    my $res = message($sid, 2);
    is_deeply $res->{content}[0], { toolResult => $done }, "$how: Strands' own result first, as it was";
    is $res->{content}[1]{toolResult}{toolUseId}, 'c1', "$how: then the interrupted call's";
    is $res->{content}[1]{toolResult}{status}, $how eq 'decline' ? 'error' : 'success', "$how: status";
    like $res->{content}[1]{toolResult}{content}[0]{text}, $how eq 'decline' ? qr/declined.*'approve'/ : qr/^done by hand$/,
        "$how: its text";
    my $agent = agent_json($sid);
    is_deeply $agent->{_internal_state}, { interrupt_state => { interrupts => {}, context => {}, activated => JSON::PP::false },
        model_state => {} }, "$how: deactivated as Strands deactivates, model_state kept";
    is_deeply $agent->{state}, { keep => 'me' }, "$how: state kept";
    ok !$s->req(GET => "/api/v1/chat/sessions/$sid")->{json}{interrupts}, "$how: no interrupt shown";
    my @calls = grep { $_->{role} eq 'tool' } @{ model_messages() };
    is_deeply [map { $_->{tool_call_id} } @calls], ['c0', 'c1'], "$how: the model got one result per call";
    fsck_clean("$how: closed");
}
{
    # a result for a call nobody waits on: 422, nothing stored
    my $sid = 'intr-bad';
    my $call = { role => 'assistant', content => [{ toolUse => { toolUseId => 'c9', name => 'x', input => {} } }] };
    lay($sid, [ut('go'), $call], is => { interrupts => {}, context => { tool_use_message => $call, tool_results => [] },
                                         activated => JSON::PP::true });
    my $r = $s->req(POST => '/api/v1/chat/completions', body => { session_id => $sid, messages => [
        { role => 'tool', tool_call_id => 'nope', content => 'x' }] });
    is $r->{status}, 422, 'a result for no interrupted call: 422';
    ok !-e adir($sid) . '/messages/message_2.json', 'nothing stored';
    is agent_json($sid)->{_internal_state}{interrupt_state}{activated}, JSON::PP::true, 'still pending';
}

# ---- numbers as written ----
{
    lay('nums', [ut('hi'), { role => 'assistant', content => [{ toolUse => { toolUseId => 't1', name => 'numbers',
        input => { n => 1 } } }] }, { role => 'user', content => [{ toolResult => { toolUseId => 't1', status => 'success',
        content => [{ text => 'ok' }] } }] }, at('done')],
        state_text => '{"big": 98765432109876543210987654321, "neg": -123456789012345678901234567890, "f": 1.10, "e": 2.5E-07}');
    my $raw = SvcTest::read_file(adir('nums') . '/messages/message_1.json');
    $raw =~ s/"n": 1\b/"n": 123456789012345678901234567891/;
    SvcTest::write_file(adir('nums') . '/messages/message_1.json', $raw);
    $fake->clear;
    chat('nums', { role => 'user', content => 'numbers?' });
    my $aj = SvcTest::read_file(adir('nums') . '/agent.json');
    like $aj, qr/"big": 98765432109876543210987654321,\n\s*"neg": -123456789012345678901234567890,\n\s*"f": 1\.10,\n\s*"e": 2\.5E-07\n/,
        'agent.json state: every number as it was written';
    my ($tc) = grep { $_->{tool_calls} } @{ model_messages() };
    is $tc->{tool_calls}[0]{function}{arguments}, '{"n":123456789012345678901234567891}', 'the model request keeps the digits';
    like $s->req(GET => '/api/v1/chat/sessions/nums/messages')->{body}, qr/"n":123456789012345678901234567891\b/,
        'the API keeps them';
}

# ---- multi-agent state, and messages Strands appended past the sidecar ----
{
    my $swarm = { type => 'swarm', id => 'team', status => 'completed', node_history => ['alpha'],
                  node_results => {}, next_nodes_to_execute => [], current_task => 'plan',
                  context => { shared_context => {}, handoff_node => undef, handoff_message => undef },
                  _internal_state => { interrupt_state => { interrupts => {}, context => {}, activated => JSON::PP::false } } };
    my $graph = { type => 'graph', id => 'pipeline', status => 'executing', completed_nodes => ['first'],
                  failed_nodes => [], interrupted_nodes => [], node_results => {}, next_nodes_to_execute => ['second'],
                  current_task => 'run', execution_order => ['first'],
                  _internal_state => { interrupt_state => { interrupts => {}, context => {}, activated => JSON::PP::false } } };
    lay('team', [ut('hello'), at('hi')], multi => { team => $swarm, pipeline => $graph });
    my $f = "$root/session_team/multi_agents/multi_agent_%s/multi_agent.json";
    my %bytes = map { $_ => SvcTest::read_file(sprintf $f, $_) } qw(team pipeline);
    my $d = $s->req(GET => '/api/v1/chat/sessions/team')->{json};
    is_deeply $d->{multi_agents}, [
        { id => 'pipeline', type => 'graph', status => 'executing', completed_nodes => ['first'] },
        { id => 'team', type => 'swarm', status => 'completed', node_history => ['alpha'] },
    ], 'the detail shows the Swarm and the Graph';
    chat('team', { role => 'user', content => 'go on' });
    is SvcTest::read_file(sprintf $f, $_), $bytes{$_}, "$_ byte for byte after a turn" for sort keys %bytes;
    # Strands appends two messages past svc's sidecar
    SvcCliTest::py(<<'PY', adir('team') . '/messages', $TS);
import json, os, sys
for i, (role, text) in enumerate([('user', 'from strands'), ('assistant', 'strands answers')], start=4):
    with open(os.path.join(sys.argv[1], 'message_%d.json' % i), 'w') as f:
        f.write(json.dumps({'message': {'role': role, 'content': [{'text': text}]}, 'message_id': i,
                            'redact_message': None, 'created_at': sys.argv[2], 'updated_at': sys.argv[2]}, indent=2))
PY
    my $l = $s->req(GET => '/api/v1/chat/sessions')->{json}{sessions};
    my ($row) = grep { $_->{session_id} eq 'team' } @$l;
    is $row->{message_count}, 6, 'the listing counts what Strands appended';
    fsck_clean('with multi-agent state and messages past the sidecar');
    SvcTest::write_file(sprintf($f, 'pipeline'), '{"type": "graph", "id": ');
    my $r = SvcCliTest::svc($cli, 'fsck', '--json');
    is $r->{rc}, 1, 'a damaged multi_agent.json is a problem';
    like $r->{out}, qr{session_team/multi_agents/multi_agent_pipeline/multi_agent\.json}, '... named';
}

# ---- every Strands content block round-trips untouched: a turn, a fork, export and import ----
{
    my $b64 = { __bytes_encoded__ => JSON::PP::true, data => 'AAECAwQ=' };
    my @blocks = (
        { text => 'all the blocks' },
        { image => { format => 'png', source => { bytes => $b64 } } },
        { document => { format => 'pdf', name => 'r', source => { bytes => $b64 } } },
        { video => { format => 'mp4', source => { bytes => $b64 } } },
        { cachePoint => { type => 'default' } },
        { guardContent => { text => { text => 'guarded', qualifiers => ['grounding_source'] } } },
    );
    my @answer = (
        { reasoningContent => { reasoningText => { text => 'thinking', signature => 'sig-1' } } },
        { reasoningContent => { redactedContent => $b64 } },
        { citationsContent => { citations => [{ title => 't', location => { documentChar => { documentIndex => 0, start => 0, end => 3 } },
                                                sourceContent => [{ text => 'abc' }] }], content => [{ text => 'cited' }] } },
        { text => 'and text' },
        { toolUse => { toolUseId => 'b1', name => 'x', input => { q => 1.5 } } },
    );
    my @result = ({ toolResult => { toolUseId => 'b1', status => 'success', content => [
        { text => 'r' }, { json => { k => [1, 2] } }, { image => { format => 'gif', source => { bytes => $b64 } } },
        { document => { format => 'txt', name => 'd', source => { bytes => $b64 } } }] } });
    lay('blocks', [{ role => 'user', content => \@blocks }, { role => 'assistant', content => \@answer },
                   { role => 'user', content => \@result }, at('ok')]);
    my $dir = adir('blocks') . '/messages';
    my %bytes = map { $_ => SvcTest::read_file("$dir/message_$_.json") } 0 .. 3;
    chat('blocks', { role => 'user', content => 'next' });
    is SvcTest::read_file("$dir/message_$_.json"), $bytes{$_}, "message $_ untouched by a turn" for 0 .. 3;
    my $p = $s->req(GET => '/api/v1/chat/sessions/blocks/messages')->{json}{messages};
    is_deeply [map { $_->{type} } @{ $p->[0]{parts} }], [qw(text image document video cache_point guard)],
        'parts of the user message';
    is_deeply [map { $_->{type} } @{ $p->[1]{parts} }], [qw(reasoning reasoning citations text tool_use)],
        'parts of the answer';
    ok $p->[1]{parts}[0]{signed} && $p->[1]{parts}[1]{redacted}, 'reasoning: signed, redacted';
    is_deeply [map { $_->{type} } @{ $p->[2]{parts}[0]{parts} }], [qw(text json image document)], 'a tool result\'s parts';
    my $r = $s->req(POST => '/api/v1/chat/sessions/blocks/fork', body => { session_id => 'blocks-fork', message_id => 3 });
    is $r->{status}, 201, 'forked';
    is SvcTest::read_file(adir('blocks-fork') . "/messages/message_$_.json") =~ s/"(created|updated)_at": "[^"]*"//gr,
       $bytes{$_} =~ s/"(created|updated)_at": "[^"]*"//gr, "message $_ the same in the fork" for 0 .. 3;
    my $out = File::Temp::tempdir(CLEANUP => 1);
    is SvcCliTest::svc($cli, 'export', '--session', 'blocks', '--out', $out)->{rc}, 0, 'exported';
    my ($bundle) = glob("$out/*");
    is $s->req(DELETE => '/api/v1/chat/sessions/blocks')->{status}, 200, 'deleted';
    is SvcCliTest::svc($cli, 'import', $bundle)->{rc}, 0, 'imported';
    is SvcTest::read_file("$dir/message_$_.json"), $bytes{$_}, "message $_ byte for byte after export and import" for 0 .. 3;
    like SvcTest::read_file("$bundle/transcripts/blocks.md"), qr/image: png.*document "r": pdf/s, 'the transcript names them';
}

$s->stop;
$fake->stop;
done_testing;
