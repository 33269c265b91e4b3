#!/usr/bin/perl
# Compaction (SPEC 15, with section 17's summary), svc only, echo model:
# POST /api/v1/responses/compact over a conversation, a previous_response_id or the input
# alone answers response.compaction (a sealed compaction item, then the newest
# agent.preserve_recent_messages messages as items, usage); the key lives on the root (0600,
# read again by a new server on the same root); a compaction item in a create request
# stands for that context; a changed byte, another user's item or an item of another root
# is 422 by name; context_management compacts a create past its threshold and answers a
# compaction item first; fields compaction does not use are refused by name.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp qw(tempdir);
use SvcTest;

my %TOK = (alice => 'tok-alice-Secr3t-0101', bob => 'tok-bob-Secr3t-0102');
my $yaml = <<"YAML";
server:
  api_token_env: ADMIN_TOK
  users:
    - {id: alice, token_env: TOK_ALICE}
    - {id: bob, token_env: TOK_BOB}
agent:
  preserve_recent_messages: 2
YAML
my %env = (TOK_ALICE => $TOK{alice}, TOK_BOB => $TOK{bob}, ADMIN_TOK => 'tok-admin-Secr3t-0100');
my $s = SvcTest->start(config => $yaml, env => \%env);
sub as {
    my ($who, $m, $p, %o) = @_;
    $o{headers} = { authorization => 'Bearer ' . ($TOK{$who} // $env{ADMIN_TOK}) };
    return $s->req($m, $p, %o);
}
sub create { as($_[0], POST => '/api/v1/responses', body => $_[1]) }
sub compact { as($_[0], POST => '/api/v1/responses/compact', body => $_[1]) }

my $r = create('alice', { input => 'first question' });
is $r->{status}, 200, 'a conversation begins' or diag $r->{body};
my $sid = $r->{headers}{'x-session-id'};
my $prev = $r->{json}{id};
for my $q ('second question', 'third question') {
    $r = create('alice', { input => $q, previous_response_id => $prev });
    $prev = $r->{json}{id};
}

# ---- compact a conversation ----
$r = compact('alice', { conversation => $sid });
is $r->{status}, 200, 'compact a conversation: 200' or diag $r->{body};
my $c = $r->{json};
is $c->{object}, 'response.compaction', 'object response.compaction';
like $c->{id}, qr/^cmp_/, 'an id';
is $c->{output}[0]{type}, 'compaction', 'the compaction item first';
like $c->{output}[0]{encrypted_content}, qr/^svc1\.[A-Za-z0-9+\/]+=*$/, 'sealed';
unlike $c->{output}[0]{encrypted_content}, qr/first question/, 'nothing readable in it';
is scalar(@{ $c->{output} }), 3, 'then the newest two messages, kept';
is_deeply [map { $_->{content}[0]{text} } @{ $c->{output} }[1, 2]],
    ['third question', 'Echo: third question (I was given 4 earlier messages.)'], 'as items';
ok $c->{usage}{input_tokens} > 0 && $c->{usage}{output_tokens} > 0, 'usage of the summary call';
is $c->{usage}{total_tokens}, $c->{usage}{input_tokens} + $c->{usage}{output_tokens}, 'total';
my $key = $s->root . '/.svc_compaction.key';
is -s $key, 32, 'the key: 32 bytes on the root';
is((stat $key)[2] & 07777, 0600, '... mode 0600');
is as('alice', GET => "/api/v1/chat/sessions/$sid")->{json}{message_count}, 6, 'the session is unchanged';

# by previous_response_id, and the input alone
$r = compact('alice', { previous_response_id => $prev, input => 'and more' });
is $r->{status}, 200, 'compact by previous_response_id with more input';
is $r->{json}{output}[-1]{content}[0]{text}, 'and more', 'the input is the newest kept';
$r = compact('alice', { input => [{ role => 'user', content => 'a' }, { role => 'assistant', content => 'b' },
                                  { role => 'user', content => 'c' }] });
is $r->{status}, 200, 'compact the input alone';
$r = compact('alice', { input => 'only this' });
is $r->{status}, 422, 'nothing before the last input: 422';
is $r->{json}{error}{param}, 'input', 'input named';
$r = compact('alice', { conversation => $sid, tools => [] });
is $r->{status}, 422, 'a field compaction does not use: 422';
is $r->{json}{error}{param}, 'tools', 'named';
$r = compact('bob', { conversation => $sid });
is $r->{status}, 404, "another user's conversation: 404";
$r = compact('alice', { previous_response_id => 'resp_0123456789abcdef0123456789abcdef' });
is $r->{status}, 404, 'an unknown response: 404';
is as('alice', GET => '/api/v1/responses/compact')->{status}, 405, 'GET: 405';
# a session id that is none is named as sent (they all said session_id)
for my $c ([{ conversation => '../x' }, 'conversation'], [{ conversation => { id => '.x' } }, 'conversation.id'],
           [{ metadata => { session_id => '../x' } }, 'metadata.session_id']) {
    $r = compact('alice', { %{ $c->[0] }, input => 'hi' });
    is_deeply [$r->{status}, $r->{json}{error}{code}, $r->{json}{error}{param}], [400, 'invalid_session_id', $c->[1]],
              "a bad $c->[1]: 400 naming it";
}

# ---- a compaction item stands for its context ----
my $item = $c->{output}[0];
$r = create('alice', { input => [$item, { role => 'user', content => 'what did we say?' }] });
is $r->{status}, 200, 'a create with the compaction item' or diag $r->{body};
like $r->{json}{output}[0]{content}[0]{text}, qr/I was given 1 earlier messages/, 'the model got one message for it';
my $nsid = $r->{headers}{'x-session-id'};
my $m = as('alice', GET => "/api/v1/chat/sessions/$nsid/messages")->{json}{messages};
like $m->[0]{content}, qr/^## Conversation Summary\n\* user: first question/, 'the summary stands for the context';
(my $bad = $item->{encrypted_content}) =~ s/^(svc1\.....)(.)/$1 . ($2 eq 'A' ? 'B' : 'A')/e;
$r = create('alice', { input => [{ %$item, encrypted_content => $bad }, { role => 'user', content => 'x' }] });
is $r->{status}, 422, 'a changed byte: 422';
is $r->{json}{error}{param}, 'input[0].encrypted_content', 'named';
$r = compact('alice', { input => [{ %$item, encrypted_content => 'svc1.AAAA' }, { role => 'user', content => 'x' }] });
is $r->{status}, 422, 'compact with a forged item: 422';
$r = create('bob', { input => [$item, { role => 'user', content => 'x' }] });
is $r->{status}, 422, "another user's compaction: 422";
$r = create('admin', { input => [$item, { role => 'user', content => 'x' }] });
is $r->{status}, 200, 'an admin reads any';

# ---- context_management ----
$r = create('alice', { previous_response_id => $prev, input => 'keep it short',
                       context_management => [{ type => 'compaction', compact_threshold => 20 }] });
is $r->{status}, 200, 'a create past its compact_threshold' or diag $r->{body};
is $r->{json}{output}[0]{type}, 'compaction', 'answers its compaction item first';
like $r->{json}{output}[-1]{content}[0]{text}, qr/I was given [0-3] earlier messages/, 'the model got the compacted window';
$r = create('alice', { input => 'x', context_management => [{ type => 'other' }] });
is $r->{status}, 422, 'an unknown context_management type: 422';
is $r->{json}{error}{param}, 'context_management[0].type', 'named';
$r = create('alice', { input => 'x', context_management => [{ type => 'compaction', compact_threshold => 0 }] });
is $r->{status}, 422, 'a threshold of 0: 422';

# ---- every host of the root reads the same key ----
my $home = $s->home;
$s->stop;
$s = SvcTest->start(home => $home, env => \%env);
$r = create('alice', { input => [$item, { role => 'user', content => 'again' }] });
is $r->{status}, 200, 'a new server on the same root opens it';
my $other = SvcTest->start(config => $yaml, env => \%env);
$r = $other->req(POST => '/api/v1/responses', body => { input => [$item, { role => 'user', content => 'x' }] },
                 headers => { authorization => "Bearer $TOK{alice}" });
is $r->{status}, 422, 'a server on another root does not';
$other->stop;
$s->stop;
done_testing;
