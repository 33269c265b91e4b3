#!/usr/bin/perl
# The Conversations API on sessions (SPEC 12.2, issue 26), through nginx: raw HTTP for the
# shapes, the files and the errors (bad input changes nothing on disk), another user's
# conversation answered as a missing one, an item's deletion as a Strands redaction (ids stay
# contiguous, the model no longer sees it); then the official `openai` client (pinned in
# t/node) driving every call of client.conversations and a Responses turn continuing one.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;
use SvcCliTest ();
use FakeOpenAI;

my %TOK = (alice => 'tok-alice-C0nv-0001', bob => 'tok-bob-C0nv-0002', root => 'tok-root-C0nv-0003');
my $s = SvcTest->start(workers => 2, SvcTest::users(
    { alice => $TOK{alice}, bob => $TOK{bob}, 'root!' => $TOK{root} }, "sessions:\n  fsync: true\n"));
my $T = JSON::PP::true;

sub as { my $who = shift; $s->req_as($TOK{$who}, @_) }
sub snapshot { $s->snapshot(qr/^\.svc_index/) }    # "nothing changed on disk" (SvcTest)
sub msgfile { my ($sid, $n) = @_; $s->root . "/session_$sid/agents/agent_svc-agent/messages/message_$n.json" }
sub rejected {    # a 4xx with a code, and nothing on disk changed
    my ($name, $status, $code, $m, $p, %o) = @_;
    my $before = snapshot();
    my $r = as(alice => $m, $p, %o);
    is $r->{status}, $status, "$name: $status";
    is $r->{json}{error}{code}, $code, "$name: $code";
    like $r->{json}{error}{message} // '', qr/\S/, "$name: says why";
    is snapshot(), $before, "$name: nothing changed on disk";
    return $r;
}

# ---- create, with items and metadata ----
my $r = as(alice => POST => '/api/v1/conversations', body => {
    metadata => { topic => 'demo' },
    items => [
        { type => 'message', role => 'user', content => 'hello there' },
        { type => 'message', role => 'assistant', content => [{ type => 'output_text', text => 'hi, alice' }] },
        { type => 'function_call', call_id => 'call_1', name => 'lookup', arguments => '{"q":"x"}' },
        { type => 'function_call_output', call_id => 'call_1', output => 'found x' },
    ] });
is $r->{status}, 200, 'create: 200';
my $c = $r->{json};
my $cid = $c->{id};
like $cid, qr/^conv_[0-9a-f]{32}$/, 'create: a conv_<32 hex> id';
is $c->{object}, 'conversation', 'create: object conversation';
like $c->{created_at}, qr/^\d{10}$/, 'create: created_at in unix seconds';
cmp_ok abs($c->{created_at} - time), '<', 60, 'create: created_at is now';
is_deeply $c->{metadata}, { topic => 'demo' }, 'create: metadata';
ok -f msgfile($cid, 3) && !-e msgfile($cid, 4), 'create: four messages stored, ids 0..3';
my $m2 = decode_json(SvcTest::read_file(msgfile($cid, 2)));
is $m2->{message}{content}[0]{toolUse}{name}, 'lookup', 'a function_call is a Strands toolUse';
is_deeply $m2->{message}{content}[0]{toolUse}{input}, { q => 'x' }, 'its arguments are the input';
my $m3 = decode_json(SvcTest::read_file(msgfile($cid, 3)));
is $m3->{message}{content}[0]{toolResult}{toolUseId}, 'call_1', 'a function_call_output is a toolResult';
my $sum = as(alice => GET => "/api/v1/chat/sessions/$cid")->{json};
is $sum->{message_count}, 4, 'the session summary counts them';
is $sum->{title}, 'hello there', 'the title is the first user text';
is_deeply $sum->{metadata}, { topic => 'demo' }, 'the summary shows the metadata';

# ---- retrieve, update ----
is_deeply as(alice => GET => "/api/v1/conversations/$cid")->{json}, $c, 'retrieve: the same object';
$r = as(alice => POST => "/api/v1/conversations/$cid", body => { metadata => { topic => 'changed', k2 => 'v' } });
is $r->{status}, 200, 'update: 200';
is_deeply $r->{json}{metadata}, { topic => 'changed', k2 => 'v' }, 'update: metadata replaced';
is $r->{json}{created_at}, $c->{created_at}, 'update: created_at kept';

# ---- items ----
$r = as(alice => GET => "/api/v1/conversations/$cid/items?order=asc");
is $r->{status}, 200, 'items: 200';
my @items = @{ $r->{json}{data} };
is_deeply [map { $_->{type} } @items], [qw(message message function_call function_call_output)], 'items: the four in order';
is_deeply [map { $_->{id} } @items], ["msg_${cid}_0", "msg_${cid}_1", "fc_${cid}_2_0", "fco_${cid}_3_0"], 'items: stable ids';
is_deeply $items[0]{content}, [{ type => 'input_text', text => 'hello there' }], 'a user message has input_text';
is $items[1]{content}[0]{type}, 'output_text', 'an assistant message has output_text';
is $items[2]{arguments}, '{"q":"x"}', 'function_call: arguments';
is $items[3]{output}, 'found x', 'function_call_output: output';
is $r->{json}{first_id}, "msg_${cid}_0", 'items: first_id';
is $r->{json}{last_id}, "fco_${cid}_3_0", 'items: last_id';
ok !$r->{json}{has_more}, 'items: no more';
$r = as(alice => GET => "/api/v1/conversations/$cid/items?limit=2");
is_deeply [map { $_->{id} } @{ $r->{json}{data} }], ["fco_${cid}_3_0", "fc_${cid}_2_0"], 'items: newest first by default, limit';
ok $r->{json}{has_more}, 'items: has_more';
$r = as(alice => GET => "/api/v1/conversations/$cid/items?limit=2&after=fc_${cid}_2_0");
is_deeply [map { $_->{id} } @{ $r->{json}{data} }], ["msg_${cid}_1", "msg_${cid}_0"], 'items: after';
ok !$r->{json}{has_more}, 'items: the last page';
is_deeply as(alice => GET => "/api/v1/conversations/$cid/items/msg_${cid}_1")->{json}, $items[1], 'retrieve an item';

$r = as(alice => POST => "/api/v1/conversations/$cid/items", body => { items => [{ role => 'user', content => 'one more' }] });
is $r->{status}, 200, 'append: 200';
is_deeply [map { $_->{id} } @{ $r->{json}{data} }], ["msg_${cid}_4"], 'append: the new item';
ok -f msgfile($cid, 4), 'append: message_4 written';
is as(alice => GET => "/api/v1/chat/sessions/$cid")->{json}{message_count}, 5, 'append: counted';

# ---- deleting an item redacts its message ----
$r = as(alice => DELETE => "/api/v1/conversations/$cid/items/msg_${cid}_1");
is $r->{status}, 200, 'delete item: 200';
is $r->{json}{id}, $cid, 'delete item: answers the conversation';
my $red = decode_json(SvcTest::read_file(msgfile($cid, 1)));
is_deeply $red->{redact_message}, { role => 'assistant', content => [{ text => '' }] }, 'a Strands redaction with empty text';
is $red->{message}{content}[0]{text}, 'hi, alice', 'the original stays under message, as Strands keeps it';
ok -f msgfile($cid, 4), 'ids stay contiguous';
$r = as(alice => GET => "/api/v1/conversations/$cid/items?order=asc");
is_deeply [map { $_->{id} } @{ $r->{json}{data} }], ["msg_${cid}_0", "fc_${cid}_2_0", "fco_${cid}_3_0", "msg_${cid}_4"], 'the item left the list';
is as(alice => GET => "/api/v1/conversations/$cid/items/msg_${cid}_1")->{status}, 404, 'and is not found';
# a reader of Strands' layout (FileSessionManager: redact_message when set, else message)
my $strands = SvcCliTest::py(<<'PY', $s->root . "/session_$cid", 'svc-agent');
import os, sys
from strands_read import load, messages
d, aid = sys.argv[1:3]
assert load(os.path.join(d, 'session.json'))['session_type'] == 'AGENT'
assert 'conversation_manager_state' in load(os.path.join(d, 'agents', 'agent_' + aid, 'agent.json'))
out = []
for _, m in messages(d, aid):
    msg = m['redact_message'] or m['message']
    out.append(msg['role'] + ':' + ','.join(sorted(k for b in msg['content'] for k in b)) + ':' +
               ''.join(b.get('text', '') for b in msg['content']))
print('\n'.join(out))
PY
is $strands, "user:text:hello there\nassistant:text:\nassistant:toolUse:\nuser:toolResult:\nuser:text:one more\n",
    'Strands reads the conversation, the deleted item redacted';
# the echo model says how many earlier messages it was given: 5 stored, one deleted
$r = as(alice => POST => '/api/v1/responses', body => { conversation => $cid, input => 'count' });
is $r->{status}, 200, 'a response continuing the conversation';
like $r->{json}{output}[0]{content}[0]{text}, qr/given 4 earlier messages/, 'the deleted item left the model context';

# ---- bad input changes nothing ----
my $items_before = as(alice => GET => "/api/v1/conversations/$cid/items")->{json};
rejected('malformed item', 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items",
         body => { items => [{ role => 'user', content => 'ok' }, { type => 'message', role => 'robot', content => 'x' }] });
rejected('unknown item type', 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items",
         body => { items => [{ type => 'image_generation_call' }] });
rejected('function_call without a call_id', 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items",
         body => { items => [{ type => 'function_call', name => 'f', arguments => '{}' }] });
rejected('arguments that are not JSON', 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items",
         body => { items => [{ type => 'function_call', call_id => 'c', name => 'f', arguments => '{' }] });
rejected('items not a list', 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items", body => { items => 'hi' });
rejected('no items', 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items", body => { items => [] });
rejected('a body that is not JSON', 400, 'invalid_json', POST => "/api/v1/conversations/$cid/items", body => '{');
my %many = map { ("k$_" => 'v') } 1 .. 17;
rejected('17 metadata keys', 422, 'invalid_field', POST => '/api/v1/conversations', body => { metadata => \%many });
rejected('a 65-character key', 422, 'invalid_field', POST => '/api/v1/conversations', body => { metadata => { 'k' x 65 => 'v' } });
rejected('a 513-character value', 422, 'invalid_field', POST => '/api/v1/conversations', body => { metadata => { k => 'v' x 513 } });
rejected('a value that is not a string', 422, 'invalid_field', POST => "/api/v1/conversations/$cid", body => { metadata => { k => 1 } });
rejected('update without metadata', 422, 'missing_field', POST => "/api/v1/conversations/$cid", body => {});
rejected('a malformed item at create', 422, 'invalid_field', POST => '/api/v1/conversations',
         body => { items => [{ role => 'user', content => [{ type => 'input_image', image_url => 'x' }] }] });
rejected('unknown item id', 404, 'not_found', GET => "/api/v1/conversations/$cid/items/msg_${cid}_99");
rejected('deleting an unknown item', 404, 'not_found', DELETE => "/api/v1/conversations/$cid/items/msg_${cid}_99");
rejected('an item id of another conversation', 404, 'not_found', DELETE => "/api/v1/conversations/$cid/items/msg_other_0");
rejected('a missing conversation', 404, 'session_not_found', GET => '/api/v1/conversations/conv_missing');
rejected('a bad order', 400, 'invalid_query', GET => "/api/v1/conversations/$cid/items?order=up");
rejected('a create named export', 400, 'invalid_session_id', POST => '/api/v1/conversations', body => { session_id => 'export' });
rejected('a create with a bad id', 400, 'invalid_session_id', POST => '/api/v1/conversations', body => { session_id => '../x' });
rejected('a create over an existing id', 409, 'session_exists', POST => '/api/v1/conversations', body => { session_id => $cid });
# a NUL in a text (it was stored cut at the NUL) and a type that is not a string (it was
# taken for a message)
for my $case ([[{ role => 'user', content => "a\x{0}b" }], 'items[0].content'],
              [[{ role => 'user', content => [{ type => 'input_text', text => "a\x{0}b" }] }], 'items[0].content'],
              [[{ type => 'function_call_output', call_id => 'c', output => "a\x{0}b" }], 'items[0].output'],
              [[{ type => 5, role => 'user', content => 'x' }], 'items[0].type']) {
    my ($items, $param) = @$case;
    my $x = rejected("items naming $param", 422, 'invalid_field', POST => "/api/v1/conversations/$cid/items", body => { items => $items });
    is $x->{json}{error}{param}, $param, "naming $param";
}
# a misspelt field is refused, not ignored (each answered 200/201 before)
for my $case (['create', '/api/v1/conversations', { metadata => { k => 'v' }, item => [] }, 'item'],
              ['update', "/api/v1/conversations/$cid", { metadata => { k => 'v' }, metdata => {} }, 'metdata'],
              ['items add', "/api/v1/conversations/$cid/items", { items => [{ role => 'user', content => 'x' }], include => [] }, 'include']) {
    my ($what, $path, $body, $param) = @$case;
    my $x = rejected("$what with an unknown field", 422, 'invalid_field', POST => $path, body => $body);
    is $x->{json}{error}{param}, $param, "$what: naming $param";
}
is_deeply as(alice => GET => "/api/v1/conversations/$cid/items")->{json}, $items_before, 'still the same items';

# ---- busy ----
{
    # a run holds the session: hold its run lock as a run does
    use Fcntl qw(:flock);
    open my $fh, '>', $s->root . "/session_$cid/.svc.run.lock" or die $!;
    flock($fh, LOCK_EX) or die $!;
    rejected('append while a run holds it', 409, 'session_busy', POST => "/api/v1/conversations/$cid/items",
             body => { items => [{ role => 'user', content => 'x' }] });
    rejected('delete an item while a run holds it', 409, 'session_busy', DELETE => "/api/v1/conversations/$cid/items/msg_${cid}_0");
    close $fh;
}

# ---- users: another user's conversation is a missing one ----
my $missing = as(bob => GET => '/api/v1/conversations/conv_nope');
for my $req ([GET => "/api/v1/conversations/$cid"], [POST => "/api/v1/conversations/$cid", body => { metadata => {} }],
             [GET => "/api/v1/conversations/$cid/items"], [GET => "/api/v1/conversations/$cid/items/msg_${cid}_0"],
             [POST => "/api/v1/conversations/$cid/items", body => { items => [{ role => 'user', content => 'x' }] }],
             [DELETE => "/api/v1/conversations/$cid/items/msg_${cid}_0"], [DELETE => "/api/v1/conversations/$cid"]) {
    my ($m, $p, @rest) = @$req;
    my $before = snapshot();
    my $x = as(bob => $m, $p, @rest);
    (my $msg = $x->{json}{error}{message} // '') =~ s/\Q$cid\E/ID/;
    (my $want = $missing->{json}{error}{message} // '') =~ s/conv_nope/ID/;
    is "$x->{status} $x->{json}{error}{code} $msg", "$missing->{status} $missing->{json}{error}{code} $want", "bob: $m $p as a missing one";
    is snapshot(), $before, "bob: $m $p changed nothing";
}
my $bobs = as(bob => POST => '/api/v1/conversations', body => { session_id => 'bobs-conv' });
is $bobs->{status}, 200, 'bob: create with a session_id';
is $bobs->{json}{id}, 'bobs-conv', 'the id is the body\'s session_id';
is_deeply $bobs->{json}{metadata}, {}, 'no metadata: an empty object';
ok -f $s->root . '/session_bobs-conv/agents/agent_svc-agent/agent.json', 'an empty conversation is a whole Strands session';
as(bob => POST => '/api/v1/conversations/bobs-conv/items', body => { items => [{ role => 'assistant', content => 'a' }, { role => 'user', content => 'a title at last' }] });
is as(bob => GET => '/api/v1/chat/sessions/bobs-conv')->{json}{title}, 'a title at last', 'appended user text titles an untitled conversation';
is_deeply [map { $_->{id} } @{ as(bob => GET => '/api/v1/conversations')->{json}{data} }], ['bobs-conv'], 'bob lists his own only';
my $al = as(alice => GET => '/api/v1/conversations')->{json};
is_deeply [map { $_->{id} } @{ $al->{data} }], [$cid], 'alice lists her own only';
is $al->{object}, 'list', 'list: object list';
my %all = map { $_->{id} => 1 } @{ as(root => GET => '/api/v1/conversations')->{json}{data} };
ok $all{$cid} && $all{'bobs-conv'}, 'an admin lists both';

# ---- delete ----
$r = as(bob => DELETE => '/api/v1/conversations/bobs-conv');
is_deeply $r->{json}, { id => 'bobs-conv', object => 'conversation.deleted', deleted => $T }, 'delete: the deleted object';
ok !-e $s->root . '/session_bobs-conv', 'delete: the session is gone';
is as(bob => GET => '/api/v1/conversations/bobs-conv')->{status}, 404, 'delete: then 404';

# ---- a real HTTP model server is not sent a deleted item either ----
{
    my $fake = FakeOpenAI->start;
    my $base = $fake->base_url;
    my $o = SvcTest->start(config => "model:\n  provider: openai\n  base_url: $base\n  api_key: k\n");
    my $id = $o->req(POST => '/api/v1/conversations', body => { items => [
        { role => 'user', content => 'keep me' }, { role => 'assistant', content => 'secret answer' },
        { role => 'user', content => 'and me' }] })->{json}{id};
    is $o->req(DELETE => "/api/v1/conversations/$id/items/msg_${id}_1")->{status}, 200, 'openai provider: item deleted';
    my $x = $o->req(POST => '/api/v1/responses', body => { conversation => $id, input => 'next' });
    is $x->{status}, 200, 'openai provider: the turn ran';
    my $sent = $fake->request_for('next');
    is_deeply [map { "$_->{role}:$_->{content}" } grep { $_->{role} ne 'system' } @{ $sent->{messages} || [] }],
        ['user:keep me', 'user:and me', 'user:next'], 'the model server was sent every message but the deleted one';
    $o->stop;
    $fake->stop;
}

# ---- the official openai client (node: scripts/install-deps) ----
my $ended = SvcTest->node_checks('conversations.mjs', $s->url('/api/v1'), $TOK{alice});
ok $ended, 'the client script ran to its end';

$s->stop;
done_testing;
