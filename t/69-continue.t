#!/usr/bin/perl
# One session per conversation for clients that name none (SPEC 15, issue 37):
# sessions.continue_stateless continues the session whose whole transcript the request's
# earlier messages equal, forks it where they leave it, never across users, and with the
# setting off every request is a new session as before. Chat completions and the Responses
# API, through nginx + svc-fcgi with the echo model.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use JSON::PP;

my %tok = (alice => 'tok-alice-69', bob => 'tok-bob-69');
my $s = SvcTest->start(env => { TOK_A => $tok{alice}, TOK_B => $tok{bob} },
                       config => "server:\n  users:\n    - {id: alice, token_env: TOK_A}\n"
                                 . "    - {id: bob, token_env: TOK_B}\n");

sub chat {
    my ($who, @msgs) = @_;
    my $r = $s->req(POST => '/api/v1/chat/completions', headers => { authorization => "Bearer $tok{$who}" },
                    body => { model => 'echo-1', messages => \@msgs });
    is $r->{status}, 200, "chat 200" or diag $r->{body};
    return $r->{json};
}
sub u { { role => 'user', content => $_[0] } }
sub a { { role => 'assistant', content => $_[0] } }
sub count { scalar @{ $s->req(GET => '/api/v1/chat/sessions', headers => { authorization => "Bearer $tok{$_[0]}" })->{json}{sessions} } }
sub msgs {
    my ($who, $sid) = @_;
    return $s->req(GET => "/api/v1/chat/sessions/$sid/messages", headers => { authorization => "Bearer $tok{$who}" })->{json}{messages};
}

# a stateless conversation, resent whole each time, stays in one session
my $one = chat(alice => u('hello'));
my $sid = $one->{session_id};
my $two = chat(alice => u('hello'), a($one->{content}), u('and again'));
is $two->{session_id}, $sid, 'the resent history continues its session';
like $two->{content}, qr/and again \(I was given 2 earlier messages/, 'the model saw the stored turn';
my $three = chat(alice => u('hello'), a($one->{content}), u('and again'), a($two->{content}), u('third'));
is $three->{session_id}, $sid, 'and again';
is scalar @{ msgs(alice => $sid) }, 6, 'six messages: nothing stored twice';
is count('alice'), 1, 'one session in the list';

# the same history diverging: a fork at that point
my $alt = chat(alice => u('hello'), a($one->{content}), u('something else'));
isnt $alt->{session_id}, $sid, 'a history that leaves the transcript runs in another session';
my $sum = $s->req(GET => "/api/v1/chat/sessions/$alt->{session_id}", headers => { authorization => "Bearer $tok{alice}" })->{json};
is_deeply $sum->{forked_from}, { session_id => $sid, message_id => 1 }, 'a fork at the divergence';
is scalar @{ msgs(alice => $alt->{session_id}) }, 4, 'the fork: the shared 2 + its turn';
is scalar @{ msgs(alice => $sid) }, 6, 'the original is untouched';

# a list ending with an assistant message: no new input, the whole list is earlier
my $cont = chat(alice => u('hello'), a($one->{content}), u('and again'), a($two->{content}),
                u('third'), a($three->{content}));
is $cont->{session_id}, $sid, 'a list ending with the answer continues the session';
is scalar @{ msgs(alice => $sid) }, 7, 'only the new answer was stored';

# a redaction changes the transcript: the old history no longer equals it (a fork where
# they still agree, before the redacted message)
my $del = $s->req(DELETE => "/api/v1/conversations/$sid/items/msg_${sid}_3", headers => { authorization => "Bearer $tok{alice}" });
is $del->{status}, 200, 'an item deleted (its message redacted)' or diag $del->{body};
my $after = chat(alice => u('hello'), a($one->{content}), u('and again'), a($two->{content}), u('fourth'));
isnt $after->{session_id}, $sid, 'the history before the redaction no longer continues the session';
$sum = $s->req(GET => "/api/v1/chat/sessions/$after->{session_id}", headers => { authorization => "Bearer $tok{alice}" })->{json};
is_deeply $sum->{forked_from}, { session_id => $sid, message_id => 2 }, 'a fork where they still agree';

# never across users
my $bobs = chat(bob => u('hello'), a($one->{content}), u('and again'));
isnt $bobs->{session_id}, $sid, "another user's equal history is a new session";
like $bobs->{content}, qr/I was given 2 earlier messages/, 'with the whole list as its context';
is count('bob'), 1, 'bob has one session';

# the Responses API: its items resent whole
my $r1 = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{alice}" },
                 body => { model => 'echo-1', input => 'responses one' })->{json};
my $text1 = $r1->{output}[0]{content}[0]{text};
my $r2 = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{alice}" }, body => { model => 'echo-1',
    input => [u('responses one'), { type => 'message', role => 'assistant',
        content => [{ type => 'output_text', text => $text1 }] }, u('responses two')] })->{json};
is $r2->{session_id}, $r1->{session_id}, 'Responses: the resent items continue the session';
is $r2->{conversation}, undef, 'conversation stays null (the request named none)';
# and by reference: the stored answer's id stands for it (SPEC 15 item_reference)
my $r3 = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{alice}" }, body => { model => 'echo-1',
    input => [u('responses one'), { type => 'item_reference', id => $r1->{output}[0]{id} },
              u('responses two'), { type => 'item_reference', id => $r2->{output}[0]{id} },
              u('responses three')] });
is $r3->{status}, 200, 'item references resolve' or diag $r3->{body};
is $r3->{json}{session_id}, $r1->{session_id}, 'Responses: references continue the session too';
like $r3->{json}{output}[0]{content}[0]{text}, qr/4 earlier messages/, 'the model saw the referenced answers';
my $bad = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{alice}" }, body => { model => 'echo-1',
    input => [u('x'), { type => 'item_reference', id => 'msg_0123456789abcdef0123456789abcdef' }, u('y')] });
is $bad->{status}, 422, 'an unknown reference: 422';
is $bad->{json}{error}{param}, 'input[1].id', 'naming input[1].id';
my $other = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{bob}" }, body => { model => 'echo-1',
    input => [u('x'), { type => 'item_reference', id => $r1->{output}[0]{id} }, u('y')] });
is $other->{status}, 422, "another user's item is unknown to bob";

# a refused turn leaves no fork behind (the fork for a diverging history was made before
# the turn was checked, and stayed when its tool result answered no call)
my $before = $s->snapshot(qr/^\.svc_index/);
my $n = count('alice');
my $ref = $s->req(POST => '/api/v1/chat/completions', headers => { authorization => "Bearer $tok{alice}" },
    body => { model => 'echo-1', messages => [u('hello'), a($one->{content}), { role => 'tool', tool_call_id => 'c1', content => 'r' }] });
is $ref->{status}, 422, 'a tool result no call asked for: 422';
is $ref->{json}{error}{param}, 'messages[2].tool_call_id', 'naming messages[2].tool_call_id';
is count('alice'), $n, 'no new session';
is $s->snapshot(qr/^\.svc_index/), $before, 'nothing changed on disk';
$ref = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{alice}" }, body => { model => 'echo-1',
    input => [u('hello'), a($one->{content}), { type => 'function_call_output', call_id => 'c1', output => 'r' }] });
is $ref->{status}, 422, 'Responses: a function_call_output no call asked for: 422';
is count('alice'), $n, 'Responses: no new session';
is $s->snapshot(qr/^\.svc_index/), $before, 'Responses: nothing changed on disk';
$ref = $s->req(POST => '/api/v1/responses', headers => { authorization => "Bearer $tok{alice}" }, body => { model => 'echo-1',
    temperature => 3, input => [u('hello'), a($one->{content}), u('too hot')] });
is_deeply [$ref->{status}, $ref->{json}{error}{param}], [422, 'temperature'], 'Responses: temperature 3 in a diverging history: 422';
is $s->snapshot(qr/^\.svc_index/), $before, '... and no fork left on disk';

$s->stop;

# continue_stateless: false keeps one new session per request
my $off = SvcTest->start(config => "sessions:\n  continue_stateless: false\n");
my $x = $off->req(POST => '/api/v1/chat/completions', body => { messages => [u('hi')] })->{json};
my $y = $off->req(POST => '/api/v1/chat/completions',
                  body => { messages => [u('hi'), a($x->{content}), u('more')] })->{json};
isnt $y->{session_id}, $x->{session_id}, 'continue_stateless false: a new session';
$off->stop;
done_testing;
