#!/usr/bin/perl
# Strands compatibility: a session laid out by hand exactly as Strands' FileSessionManager
# writes it (no sidecar) is listed and continued; restore follows removed_message_count and
# the sliding-window rule; svc_turns.jsonl with a torn last line is read without failing.
use strict;
use warnings;
use utf8;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

sub enc { my $s = shift; utf8::encode($s); $s }

# Lay out a Strands session with Python, in the exact shapes and order Strands writes.
# messages: array of Message dicts; opts: ids (default 0..n-1), agent extras.
sub strands_session {
    my ($h, $sid, $messages, %o) = @_;
    my $spec = {
        root => $h->{root}, sid => $sid, agent => $h->{agent}, messages => $messages,
        ids => $o{ids} // [0 .. $#$messages], removed => $o{removed} // 0,
        ts => $o{ts} // '2025-03-04T05:06:07.123456+00:00',
        state => $o{state} // {},
    };
    py(<<'PY', jencode($spec));
import json, os, sys
s = json.loads(sys.argv[1])
def dump(path, obj):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(json.dumps(obj, indent=2, ensure_ascii=False))
sdir = os.path.join(s['root'], 'session_' + s['sid'])
adir = os.path.join(sdir, 'agents', 'agent_' + s['agent'])
os.makedirs(os.path.join(adir, 'messages'), exist_ok=True)
os.makedirs(os.path.join(sdir, 'multi_agents'), exist_ok=True)
ts = s['ts']
dump(os.path.join(sdir, 'session.json'),
     {'session_id': s['sid'], 'session_type': 'AGENT', 'created_at': ts, 'updated_at': ts})
dump(os.path.join(adir, 'agent.json'), {
    'agent_id': s['agent'], 'state': s['state'],
    'conversation_manager_state': {'__name__': 'SlidingWindowConversationManager',
                                   'removed_message_count': s['removed'], 'model_call_count': 3},
    '_internal_state': {'interrupt_state': {'interrupts': {}, 'context': {}, 'activated': False},
                        'model_state': {}},
    'created_at': ts, 'updated_at': ts})
for mid, m in zip(s['ids'], s['messages']):
    dump(os.path.join(adir, 'messages', 'message_%d.json' % mid),
         {'message': m, 'message_id': mid, 'redact_message': None, 'created_at': ts, 'updated_at': ts})
PY
}

sub ut { { role => 'user', content => [{ text => $_[0] }] } }
sub at { { role => 'assistant', content => [{ text => $_[0] }] } }

# ---- a Strands session is listed with a derived title and continued ----
{
    my $h = new_home();
    my $first = "Bonjour, peux-tu m'aider\navec ce problème 日本語 qui est vraiment très long et dépasse la limite";
    my @msgs = (
        ut($first),
        { role => 'assistant', content => [{ toolUse => { toolUseId => 'tooluse_1', name => 'clock', input => {} } }] },
        { role => 'user', content => [{ toolResult => { toolUseId => 'tooluse_1', status => 'success',
            content => [{ text => '2025-03-04T05:06:07Z' }] } }] },
        at('Il est 5h06.'),
        ut('merci'),
        at('de rien'),
    );
    strands_session($h, 'strands-1', \@msgs, state => { custom => 'kept' });
    my $sdir = native_dir($h, 'strands-1');
    ok(!-e "$sdir/svc_session.json", 'no sidecar to begin with');

    my $r = svc($h, 'sessions', 'list');
    is($r->{rc}, 0, 'list ok') or diag($r->{err});
    my $l = jdecode($r->{out});
    is(scalar @{ $l->{sessions} }, 1, 'the Strands session is listed');
    my $s = $l->{sessions}[0];
    is($s->{session_id}, 'strands-1', 'its id');
    # cut at the last word boundary of 47 code points, then an ellipsis: 48 at most
    my $flat = $first =~ s/\n/ /gr;
    my $want = substr($flat, 0, 47) =~ s/ \S*\z//r . "\x{2026}";
    is($want, "Bonjour, peux-tu m'aider avec ce probl\x{e8}me \x{65e5}\x{672c}\x{8a9e}\x{2026}",
       '(the expected title, cut after a whole word)');
    is($s->{title}, $want, 'title: first user text, newline folded, cut at a word, ellipsis');
    is($s->{message_count}, 6, 'message_count from the files');
    is($s->{status}, 'idle', 'status idle');
    ok(!-e "$sdir/svc_session.json", 'listing writes no sidecar');

    $r = svc($h, 'sessions', 'show', 'strands-1');
    is($r->{rc}, 0, 'show ok');
    is(jdecode($r->{out})->{title}, $want, 'show has the same derived title');

    $r = svc($h, 'sessions', 'messages', 'strands-1');
    is($r->{rc}, 0, 'messages ok');
    my $m = jdecode($r->{out});
    is($m->{total}, 6, 'total 6');
    is_deeply([map { $_->{role} } @{ $m->{messages} }], [qw(user assistant tool assistant user assistant)],
        'roles as the API projects them');

    my $agent_before = json_file("$sdir/agents/agent_svc-agent/agent.json");
    $r = svc($h, 'chat', 'strands-1', 'continue please');
    is($r->{rc}, 0, 'svc chat continues the Strands session') or diag($r->{err});
    like($r->{out}, qr/I was given 6 earlier messages/, 'the model sees the 6 earlier messages');
    is_deeply([msg_ids($h, 'strands-1')], [0 .. 7], 'new ids continue at 6, 7');
    my $sc = json_file("$sdir/svc_session.json");
    is($sc->{title}, $want, 'the sidecar keeps the derived title');
    is($sc->{message_count}, 8, 'sidecar message_count 8');
    my $agent = json_file("$sdir/agents/agent_svc-agent/agent.json");
    is($agent->{created_at}, $agent_before->{created_at}, 'agent.json created_at kept');
    is_deeply($agent->{state}, { custom => 'kept' }, 'agent state kept');
    is($agent->{conversation_manager_state}{model_call_count}, 4, 'model_call_count continues from 3');
    for my $f ('session.json', 'agents/agent_svc-agent/agent.json', map { "agents/agent_svc-agent/messages/message_$_.json" } 0 .. 7) {
        is(slurp("$sdir/$f"), python_redump("$sdir/$f"), "$f still in Python's exact format");
    }
    my $m2 = json_file("$sdir/agents/agent_svc-agent/messages/message_2.json");
    is($m2->{message}{content}[0]{toolResult}{content}[0]{text}, '2025-03-04T05:06:07Z', 'Strands messages untouched');
}

# ---- ids continue from the largest stored id + 1, even with a gap ----
{
    my $h = new_home();
    strands_session($h, 'gap', [ut('a'), at('b'), ut('c'), at('d')], ids => [0, 1, 5, 6]);
    my $r = svc($h, 'chat', 'gap', 'e');
    is($r->{rc}, 0, 'chat on a session with an id gap') or diag($r->{err});
    like($r->{out}, qr/I was given 4 earlier messages/, 'all four messages restored');
    is_deeply([msg_ids($h, 'gap')], [0, 1, 5, 6, 7, 8], 'new ids are max + 1 = 7, 8');
}

# ---- restore honours removed_message_count as a position in numeric order ----
{
    my $h = new_home();
    strands_session($h, 'offset', [map { $_ % 2 ? at("a$_") : ut("u$_") } 0 .. 11], removed => 8);
    my $r = svc($h, 'chat', 'offset', 'next');
    is($r->{rc}, 0, 'chat ok') or diag($r->{err});
    like($r->{out}, qr/I was given 4 earlier messages/, 'restore starts at position 8 (messages 8..11)');
    is(json_file(native_dir($h, 'offset') . '/agents/agent_svc-agent/agent.json')
        ->{conversation_manager_state}{removed_message_count}, 8, 'removed_message_count unchanged');
}

# ---- the sliding window (window_size 40): 1, 2 and 100 turns ----
sub removed_of {
    my ($h, $sid) = @_;
    json_file(native_dir($h, $sid) . '/agents/agent_svc-agent/agent.json')
        ->{conversation_manager_state}{removed_message_count};
}
sub window_start_ok {
    my ($h, $sid, $removed) = @_;
    my @ids = msg_ids($h, $sid);
    return 1 if $removed >= @ids;
    my $m = json_file(msg_dir($h, $sid) . "/message_$ids[$removed].json")->{message};
    return 0 if $m->{role} ne 'user';
    return 0 if grep { exists $_->{toolResult} } @{ $m->{content} };
    return 1;
}
{
    my $h = new_home(yaml_extra => "agent:\n  window_size: 40\n");
    # The rule (core/session.c run_apply_window, SPEC 2.1): before each model call, when the
    # window (restored messages + input) holds more than 40 messages, the oldest leave until
    # 40 remain, then more leave until the window starts at a user message that is not a
    # tool result. With plain turns (user, assistant) turn k sees 2k-1 messages; from turn 21
    # on, 41 -> trim 1 lands on an assistant -> 2 leave: the model gets 39 (38 earlier).
    my ($bad_given, $bad_removed, $bad_start) = (0, 0, 0);
    for my $k (1 .. 100) {
        my $r = svc($h, 'chat', 'win', "turn $k");
        if ($r->{rc} != 0) { fail("turn $k: $r->{err}"); last }
        my $given = $k <= 20 ? 2 * ($k - 1) : 38;
        my $removed = $k <= 20 ? 0 : 2 * ($k - 20);
        my ($got) = $r->{out} =~ /I was given (\d+) earlier messages/;
        if (!defined $got || $got != $given) { $bad_given++; diag("turn $k: given " . ($got // 'undef') . ", want $given") if $bad_given < 4 }
        my $rm = removed_of($h, 'win');
        if ($rm != $removed) { $bad_removed++; diag("turn $k: removed $rm, want $removed") if $bad_removed < 4 }
        $bad_start++ unless window_start_ok($h, 'win', $rm);
        if ($k == 1) { is($got, 0, 'after 1 turn: the model was given 0 earlier messages'); is($rm, 0, 'removed 0') }
        if ($k == 2) { is($got, 2, 'after 2 turns: the model was given 2 earlier messages'); is($rm, 0, 'removed 0') }
    }
    is($bad_given, 0, 'each of 100 turns: the model was given min(2(k-1), 38) earlier messages');
    is($bad_removed, 0, 'each of 100 turns: removed_message_count = max(0, 2(k-20))');
    is($bad_start, 0, 'the window never starts with an assistant message or a toolResult');
    is(scalar(my @ids = msg_ids($h, 'win')), 200, '200 message files: none deleted');
    is(removed_of($h, 'win'), 160, 'after 100 turns removed_message_count is 160');
    my $sc = json_file(sidecar_path($h, 'win'));
    is($sc->{token_state}{removed_message_count}, 160, 'token_state.removed_message_count 160');
    is($sc->{message_count}, 200, 'message_count 200');
}

# ---- the window with tool turns never starts with a toolResult or an assistant message ----
for my $win (3, 5, 7) {
    my $h = new_home(yaml_extra => "agent:\n  window_size: $win\n");
    my ($bad, $badans) = (0, 0);
    for my $k (1 .. 8) {
        my $in = $k % 2 ? '/tool clock {}' : "plain $k";
        my $r = svc($h, 'chat', 'tools', $in);
        if ($r->{rc} != 0) { fail("window $win turn $k: $r->{err}"); last }
        $badans++ if $k % 2 && $r->{out} !~ /^Tool clock returned: /;
        my $rm = removed_of($h, 'tools');
        $bad++ unless window_start_ok($h, 'tools', $rm);
    }
    is($bad, 0, "window $win with tool turns: the stored window always starts at a user text message");
    is($badans, 0, "window $win: tool turns answer with the tool result");
}
{
    my $h = new_home(yaml_extra => "agent:\n  window_size: 2\n");
    my $r = svc($h, 'chat', 'tools2', '/tool clock {}');
    is($r->{rc}, 0, 'window 2: tool turn ok');
    like($r->{out}, qr/^Tool clock returned: /, 'window 2: the model still sees the tool use and its result');
    ok(window_start_ok($h, 'tools2', removed_of($h, 'tools2')), 'window 2: removed_message_count does not point at a toolResult');
}

# ---- svc_turns.jsonl with a torn last line ----
{
    my $h = new_home();
    is(svc($h, 'chat', 'torn', 'one')->{rc}, 0, 'turn 1');
    is(svc($h, 'chat', 'torn', 'two')->{rc}, 0, 'turn 2');
    my $tp = native_dir($h, 'torn') . '/svc_turns.jsonl';
    open my $fh, '>>:raw', $tp or die;
    print $fh '{"schema_version":1,"turn_id":"turn-to';
    close $fh;
    my $r = svc($h, 'sessions', 'messages', 'torn', '--turns');
    is($r->{rc}, 0, 'messages --turns does not fail on a torn line') or diag($r->{err});
    my $m = jdecode($r->{out});
    is(scalar @{ $m->{turns} }, 2, 'the two whole turn lines are returned');
    is($m->{turns_skipped}, 1, 'the torn line is reported as turns_skipped');

    # a garbage (newline-terminated) line in the middle is skipped too
    $r = svc($h, 'chat', 'torn', 'three');
    is($r->{rc}, 0, 'a run after the torn line works') or diag($r->{err});
    $r = svc($h, 'sessions', 'messages', 'torn', '--turns');
    $m = jdecode($r->{out});
    is(scalar @{ $m->{turns} }, 3, 'the turn of the run after the torn line is readable');
    is($m->{turns_skipped}, 1, 'still one skipped line');
    is($m->{total}, 6, 'messages unaffected');
}

done_testing();
