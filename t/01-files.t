#!/usr/bin/perl
# Exact shapes of the files `svc chat` writes (SPEC 2.1, 2.2): keys and their order, types,
# timestamps, indentation, byte-for-byte equality with Python's json.dumps(indent=2,
# ensure_ascii=False), trailing newlines, message ids, and redact_message on read.
use strict;
use warnings;
use utf8;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

my $h = new_home();
my $sid = 'files-1';
my $input1 = "héllo 日本 / \"quoted\" \\ back\ttab";
my $r = svc($h, 'chat', $sid, enc($input1));
is($r->{rc}, 0, 'first chat exits 0') or diag($r->{err});
like($r->{out}, qr/I was given 0 earlier messages/, 'echo answer');
is($r->{err}, '', 'nothing on stderr');

my $sdir = native_dir($h, $sid);
my $adir = "$sdir/agents/agent_svc-agent";
my $agent_created_1 = json_file("$adir/agent.json")->{created_at};
my $session_created_1 = json_file("$sdir/session.json")->{created_at};
select(undef, undef, undef, 0.02);
$r = svc($h, 'chat', $sid, 'second turn');
is($r->{rc}, 0, 'second chat exits 0') or diag($r->{err});
like($r->{out}, qr/Echo: second turn \(I was given 2 earlier messages\.\)/, 'second answer');

# Key order of an object inside a file, through Python (which keeps file order).
sub keys_of {
    my ($path, $expr) = @_;
    my $out = py(<<'PY', $path, $expr);
import json, sys
d = json.loads(open(sys.argv[1], 'rb').read().decode('utf-8'))
o = eval(sys.argv[2], {'d': d})
print(json.dumps(list(o.keys())))
PY
    return jdecode($out);
}

sub check_native_bytes {
    my ($path, $name) = @_;
    my $bytes = slurp($path);
    ok(defined $bytes && length $bytes, "$name exists");
    unlike($bytes, qr/\n\z/, "$name has no trailing newline");
    is($bytes, python_redump($path), "$name is byte-for-byte Python's json.dumps(indent=2, ensure_ascii=False)");
    unlike($bytes, qr/\t/, "$name has no tab characters (2-space indent)");
    like($bytes, qr/\A\{\n  "/, "$name starts with a 2-space indented key");
}

sub is_ts { my ($v, $name) = @_; like($v // '', TS_RE, "$name is a UTC timestamp with microseconds and +00:00") }

# ---- session.json ----
{
    my $p = "$sdir/session.json";
    check_native_bytes($p, 'session.json');
    is_deeply(keys_of($p, 'd'), [qw(session_id session_type created_at updated_at)], 'session.json key order');
    my $s = json_file($p);
    is($s->{session_id}, $sid, 'session_id');
    is($s->{session_type}, 'AGENT', 'session_type AGENT');
    is_ts($s->{created_at}, 'session.json created_at');
    is_ts($s->{updated_at}, 'session.json updated_at');
    is($s->{created_at}, $session_created_1, 'session.json created_at kept across runs');
}

# ---- agent.json ----
{
    my $p = "$adir/agent.json";
    check_native_bytes($p, 'agent.json');
    is_deeply(keys_of($p, 'd'),
        [qw(agent_id state conversation_manager_state _internal_state created_at updated_at)],
        'agent.json key order');
    is_deeply(keys_of($p, 'd["conversation_manager_state"]'),
        [qw(__name__ removed_message_count model_call_count)], 'conversation_manager_state key order');
    is_deeply(keys_of($p, 'd["_internal_state"]'), [qw(interrupt_state model_state)], '_internal_state key order');
    is_deeply(keys_of($p, 'd["_internal_state"]["interrupt_state"]'), [qw(interrupts context activated)],
        'interrupt_state key order');
    my $bytes = slurp($p);
    like($bytes, qr/\n  "state": \{\},\n/, 'empty state rendered as {}');
    like($bytes, qr/\n      "interrupts": \{\},\n      "context": \{\},\n      "activated": false\n/,
        'interrupt_state rendered exactly');
    like($bytes, qr/\n    "model_state": \{\}\n/, 'empty model_state rendered as {}');
    my $a = json_file($p);
    is($a->{agent_id}, 'svc-agent', 'agent_id');
    is($a->{conversation_manager_state}{__name__}, 'SlidingWindowConversationManager', '__name__');
    is($a->{conversation_manager_state}{removed_message_count}, 0, 'removed_message_count 0');
    is($a->{conversation_manager_state}{model_call_count}, 2, 'model_call_count counts both turns');
    ok(JSON::PP::is_bool($a->{_internal_state}{interrupt_state}{activated}), 'activated is a boolean');
    like($bytes, qr/"removed_message_count": 0,/, 'removed_message_count is an integer');
    is_ts($a->{created_at}, 'agent.json created_at');
    is_ts($a->{updated_at}, 'agent.json updated_at');
    is($a->{created_at}, $agent_created_1, 'agent.json created_at kept on rewrite');
    isnt($a->{updated_at}, $a->{created_at}, 'agent.json updated_at moved on rewrite');
}

# ---- message files ----
{
    opendir(my $d, "$adir/messages") or die;
    my @names = sort grep { !/^\./ } readdir $d;
    is_deeply(\@names, [map { "message_$_.json" } 0 .. 3], 'message files message_0..3.json, no padding, nothing else');
    for my $id (0 .. 3) {
        my $p = "$adir/messages/message_$id.json";
        check_native_bytes($p, "message_$id.json");
        is_deeply(keys_of($p, 'd'), [qw(message message_id redact_message created_at updated_at)],
            "message_$id.json key order");
        my $m = json_file($p);
        my $bytes = slurp($p);
        like($bytes, qr/\n  "message_id": $id,\n/, "message_id $id is an integer");
        like($bytes, qr/\n  "redact_message": null,\n/, "redact_message null");
        is_ts($m->{created_at}, "message_$id created_at");
        is_ts($m->{updated_at}, "message_$id updated_at");
        my $role = $id % 2 ? 'assistant' : 'user';
        is($m->{message}{role}, $role, "message_$id role $role");
        is_deeply(keys_of($p, 'd["message"]'), $id % 2 ? [qw(role content metadata)] : [qw(role content)],
            "message_$id message key order");
        is(ref $m->{message}{content}, 'ARRAY', 'content is an array');
        for my $b (@{ $m->{message}{content} }) {
            is(scalar(keys %$b), 1, 'content block has exactly one key');
        }
        if ($id % 2) {
            is_deeply(keys_of($p, 'd["message"]["metadata"]'), [qw(usage metrics)], 'metadata key order');
            is_deeply(keys_of($p, 'd["message"]["metadata"]["usage"]'), [qw(inputTokens outputTokens totalTokens)],
                'usage key order');
            my $u = $m->{message}{metadata}{usage};
            is($u->{totalTokens}, $u->{inputTokens} + $u->{outputTokens}, 'totalTokens = input + output');
            like($bytes, qr/"latencyMs": \d+\n/, 'metrics.latencyMs is an integer');
        }
    }
    my $m0 = slurp("$adir/messages/message_0.json");
    like($m0, qr/"text": "h\x{c3}\x{a9}llo \x{e6}\x{97}\x{a5}\x{e6}\x{9c}\x{ac}/, 'non-ASCII written as raw UTF-8');
    unlike($m0, qr/\\u00e9|\\u65e5/, 'non-ASCII not escaped');
    like($m0, qr{ / \\"quoted\\" \\\\ back\\ttab"}, 'slash unescaped; quote, backslash and tab escaped like Python');
    is(json_file("$adir/messages/message_0.json")->{message}{content}[0]{text}, $input1, 'text round-trips');
}

# ---- svc_session.json (sidecar: pretty, WITH trailing newline) ----
{
    my $p = "$sdir/svc_session.json";
    my $bytes = slurp($p);
    like($bytes, qr/\}\n\z/, 'svc_session.json ends with a newline');
    unlike($bytes, qr/\n\n\z/, 'exactly one trailing newline');
    is($bytes, python_redump($p) . "\n", 'svc_session.json is Python json.dumps(indent=2) plus newline');
    is_deeply(keys_of($p, 'd'), [qw(schema_version session_id agent_id title user_id channel model locale
        created_at updated_at message_count turn_count run_count last_run_id status archived archived_at
        current_run last_error token_state memory_state)], 'svc_session.json key order (SPEC 2.2)');
    my $sc = json_file($p);
    is($sc->{schema_version}, 1, 'schema_version 1');
    is($sc->{message_count}, 4, 'message_count 4');
    is($sc->{turn_count}, 2, 'turn_count 2');
    is($sc->{run_count}, 2, 'run_count 2');
    is($sc->{status}, 'idle', 'status idle');
    like($sc->{last_run_id}, qr/^run-[0-9a-f]{16}$/, 'last_run_id run-<16 hex>');
    is($sc->{title}, $input1 =~ s/\t/ /r, 'title from the first input (tab folded)');
    is_ts($sc->{created_at}, 'sidecar created_at');
    is_ts($sc->{updated_at}, 'sidecar updated_at');
    ok(JSON::PP::is_bool($sc->{archived}) && !$sc->{archived}, 'archived false');
    ok(!defined $sc->{current_run} && !defined $sc->{last_error} && !defined $sc->{archived_at}, 'nulls');
    is_deeply([sort keys %{ $sc->{token_state} }], [sort qw(last_prompt_tokens last_completion_tokens
        last_total_tokens cumulative_prompt_tokens cumulative_completion_tokens cumulative_total_tokens
        model_context_window utilization_ratio loop_count removed_message_count)], 'token_state keys');
}

# ---- svc_turns.jsonl: compact lines, one per run ----
{
    my $t = slurp("$sdir/svc_turns.jsonl");
    my @lines = split /\n/, $t;
    is(scalar @lines, 2, 'two turn lines');
    like($t, qr/\n\z/, 'turns file ends with a newline');
    for my $l (@lines) {
        unlike($l, qr/": |, /, 'turn line is compact');
        my $o = jdecode($l);
        is($o->{status}, 'done', 'turn status done');
        like($o->{turn_id}, qr/^turn-[0-9a-f]{16}$/, 'turn_id');
    }
    is_deeply(jdecode($lines[1])->{output_message_ids}, [3], 'second turn output ids [3]');
    is(jdecode($lines[1])->{input_message_id}, 2, 'second turn input id 2');
}

# ---- redact_message is used on read ----
{
    my $p = "$adir/messages/message_1.json";
    my $orig = json_file($p);
    my $long = 'R' x 4000;
    my $rec = py(<<'PY', $p, $long);
import json, sys
p, long = sys.argv[1], sys.argv[2]
d = json.loads(open(p, 'rb').read().decode('utf-8'))
d['redact_message'] = {'role': 'assistant', 'content': [{'text': long}]}
open(p, 'wb').write(json.dumps(d, indent=2, ensure_ascii=False).encode('utf-8'))
PY
    $r = svc($h, 'sessions', 'messages', $sid);
    is($r->{rc}, 0, 'messages query ok') or diag($r->{err});
    my $res = jdecode($r->{out});
    my ($row) = grep { $_->{message_id} == 1 } @{ $res->{messages} };
    is($row->{content}, $long, 'messages query shows redact_message text');
    is($row->{raw_native}{content}[0]{text}, $long, 'raw_native is the redacted message');
    unlike($r->{out}, qr/I was given 0 earlier/, 'the original text is not shown');

    # restore: the model is given the redacted message (4000 chars = 1000 tokens more)
    $r = svc($h, 'chat', $sid, 'third');
    is($r->{rc}, 0, 'chat after redaction ok') or diag($r->{err});
    my $m5 = json_file("$adir/messages/message_5.json");
    cmp_ok($m5->{message}{metadata}{usage}{inputTokens}, '>=', 1000,
        'the model was given the redacted (long) text, not the original');
    my $m1 = json_file($p);
    is($m1->{redact_message}{content}[0]{text}, $long, 'redact_message kept on disk');
    is($m1->{message}{content}[0]{text}, $orig->{message}{content}[0]{text}, 'original message kept on disk');
}

# ---- ids continue from the largest + 1, with no padding past 9 ----
{
    my $h2 = new_home();
    for my $i (1 .. 6) {
        my $x = svc($h2, 'chat', 'ids', "turn $i");
        is($x->{rc}, 0, "turn $i ok") or diag($x->{err});
    }
    is_deeply([msg_ids($h2, 'ids')], [0 .. 11], 'ids 0..11');
    ok(-f msg_dir($h2, 'ids') . '/message_10.json', 'message_10.json (decimal, no padding)');
    my $x = svc($h2, 'chat', 'ids', 'turn 7');
    like($x->{out}, qr/I was given 12 earlier messages/, 'numeric order: all 12 earlier messages restored');
}

sub enc { my $s = shift; utf8::encode($s); $s }

done_testing();
