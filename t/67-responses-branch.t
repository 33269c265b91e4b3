#!/usr/bin/perl
# Branches (SPEC 12.3): previous_response_id naming an older response forks a new session
# holding the messages up to that response's output (forked_from in its summary); the
# original is untouched; the newest continues in place. Another user's response is 404 as an
# unknown one and forks nothing. The official `openai` client (t/node/branch.mjs) drives the
# same, and a Strands-layout reader reads the branch as an ordinary session.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;
use SvcCliTest ();

my %TOK = (alice => 'tok-alice-Br4nch-0001', bob => 'tok-bob-Br4nch-0002');
my $s = SvcTest->start(workers => 2, SvcTest::users(\%TOK));
my $ROOT = $s->root;

sub as { my $who = shift; $s->req_as($TOK{$who}, @_) }
sub turn {
    my ($who, $input, $prev) = @_;
    my $r = as($who => POST => '/api/v1/responses',
               body => { model => 'echo-1', input => $input, ($prev ? (previous_response_id => $prev) : ()) });
    is $r->{status}, 200, "turn '$input': 200" or diag explain $r->{json};
    return $r->{json};
}
sub files { my $sid = shift; my @f = glob("$ROOT/session_$sid/agents/*/messages/message_*.json"); scalar @f }
sub roots { opendir my $d, $ROOT or die; sort grep { /^session_/ } readdir $d }

my $a = turn(alice => 'one');
my $b = turn(alice => 'two', $a->{id});
my $main = $a->{session_id};
is $b->{session_id}, $main, 'the newest response continues in place';
is files($main), 4, 'the main line: 4 messages';
my @before = roots();

# another user's response: 404 as an unknown one, nothing forked
my $r = as(bob => POST => '/api/v1/responses', body => { model => 'echo-1', input => 'x', previous_response_id => $a->{id} });
is $r->{status}, 404, "another user's response: 404";
my $u = as(bob => POST => '/api/v1/responses', body => { model => 'echo-1', input => 'x', previous_response_id => 'resp_' . ('0' x 32) });
is $r->{json}{error}{code}, $u->{json}{error}{code}, '... with the code an unknown one gets';
is_deeply [roots()], \@before, 'no session was forked or made for bob';

# a branch turn refused before it ran leaves no branch behind
my $snap = $s->snapshot(qr/^\.svc_index/);
$r = as(alice => POST => '/api/v1/responses', body => { model => 'echo-1', previous_response_id => $a->{id},
    input => [{ type => 'function_call_output', call_id => 'c1', output => 'r' }] });
is $r->{status}, 422, 'a branch turn answering no call: 422';
is $r->{json}{error}{param}, 'input[0].call_id', 'naming input[0].call_id';
is_deeply [roots()], \@before, 'no branch was left behind';
is $s->snapshot(qr/^\.svc_index/), $snap, 'nothing changed on disk';

# branch from the older response
my $x = turn(alice => 'other', $a->{id});
my $br = $x->{session_id};
isnt $br, $main, 'an older response forks a new session';
like $x->{output}[0]{content}[0]{text}, qr/2 earlier messages/, 'the model saw turn one only';
is $x->{conversation}, undef, 'conversation null: the request named none (SPEC 15)';
is files($br), 4, 'the branch: 2 copied + 1 turn';
is files($main), 4, 'the main line is untouched';
my $sum = as(alice => GET => "/api/v1/chat/sessions/$br")->{json};
is_deeply $sum->{forked_from}, { session_id => $main, message_id => 1 }, 'forked_from: the main line at message 1'
    or diag explain $sum;
is as(bob => GET => "/api/v1/chat/sessions/$br")->{status}, 404, "the branch is alice's";
my $y = turn(alice => 'more', $x->{id});
is $y->{session_id}, $br, "the branch's newest continues in place";
my $c = turn(alice => 'three', $b->{id});
is $c->{session_id}, $main, 'the main line continues in place';
like $c->{output}[0]{content}[0]{text}, qr/4 earlier messages/, '... with its own history';

# a Strands-layout reader sees the branch as an ordinary session
my $check = SvcCliTest::py(<<'PY', "$ROOT/session_$br", $br);
import os, sys
from strands_read import load, messages
d, sid = sys.argv[1:3]
s = load(os.path.join(d, 'session.json'))
assert s['session_id'] == sid and s['session_type'] == 'AGENT', s
(aid,) = [n[6:] for n in os.listdir(os.path.join(d, 'agents'))]
a = load(os.path.join(d, 'agents', 'agent_' + aid, 'agent.json'))
assert a['agent_id'] == aid and 'conversation_manager_state' in a, a
for n, m in messages(d, aid):
    assert m['message_id'] == n, m
    print(m['message']['role'] + ':' + ''.join(b.get('text', '') for b in m['message']['content']))
PY
my @msgs = split /\n/, $check;
is scalar @msgs, 6, 'a Strands reader finds 6 messages on the branch';
is $msgs[0], 'user:one', 'the copied first turn';
is $msgs[2], 'user:other', 'then the branch turn';
is $msgs[4], 'user:more', 'then the turn that continued it';

# ---- the official openai client (node: scripts/install-deps) ----
my $end = SvcTest->node_checks('branch.mjs', $s->url('/api/v1'), $TOK{alice});
ok $end && $end->{branch}, 'the client script ran to its end';
is as(alice => GET => "/api/v1/chat/sessions/$end->{branch}")->{json}{forked_from}{session_id}, $end->{main},
    "the client's branch says where it forked from" if $end && $end->{branch};

$s->stop;
done_testing;
