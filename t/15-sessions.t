#!/usr/bin/perl
# Chat through sessions and the dashboard session API (SPEC 4.1, 4.3), end to end.
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use Fcntl qw(:flock);
use SvcTest;

my $s = SvcTest->start(workers => 2);
my $T = JSON::PP::true;
my $F = JSON::PP::false;

sub chat {
    my ($sid, $text, %o) = @_;
    my %b = (messages => [{ role => 'user', content => $text }], %{ $o{extra} || {} });
    $b{session_id} = $sid if defined $sid;
    return $s->req(POST => $o{path} || '/api/chat', body => \%b, headers => $o{headers} || {});
}

# two turns on one session: the second sees the first
my $r = chat('s-one', 'first question');
is $r->{status}, 200, 'turn 1: 200';
is $r->{headers}{'x-session-id'}, 's-one', 'X-Session-Id header';
my $j = $r->{json};
is $j->{object}, 'chat.completion', 'chat.completion object';
is $j->{session_id}, 's-one', 'session_id in body';
like $j->{run_id}, qr/^run-/, 'run_id';
is $j->{id}, "chatcmpl-$j->{run_id}", 'id is chatcmpl-<run id>';
is $j->{choices}[0]{message}{role}, 'assistant', 'assistant message';
is $j->{choices}[0]{message}{content}, $j->{content}, 'content mirrors the message';
is $j->{choices}[0]{finish_reason}, 'stop', 'finish_reason';
like $j->{content}, qr/first question.*given 0 earlier messages/, 'echo answer, no history';
ok $j->{usage}{total_tokens} > 0, 'usage';
is $j->{usage}{total_tokens}, $j->{usage}{prompt_tokens} + $j->{usage}{completion_tokens}, 'usage adds up';

$r = chat('s-one', 'second question');
like $r->{json}{content}, qr/second question.*given 2 earlier messages/, 'turn 2 restored context';

# session id from metadata, then from the header; the alias endpoint
$r = $s->req(POST => '/api/v1/chat/completions', body => {
    messages => [{ role => 'user', content => 'via alias' }], metadata => { session_id => 's-meta' } });
is $r->{json}{session_id}, 's-meta', 'metadata.session_id used (alias endpoint)';
$r = chat(undef, 'via header', headers => { 'x-session-id' => 's-hdr' });
is $r->{json}{session_id}, 's-hdr', 'X-Session-Id header used';
$r = chat(undef, 'no id at all');
like $r->{json}{session_id}, qr/^sess-[0-9a-f]{16}$/, 'new random session id';
my $random = $r->{json}{session_id};

# history on the first run is imported; input is the last user message with content
$r = $s->req(POST => '/api/chat', body => { session_id => 's-hist', messages => [
    { role => 'system', content => 'be brief' },
    { role => 'user', content => 'old q' },
    { role => 'assistant', content => 'old a' },
    { role => 'user', content => [{ type => 'text', text => 'parts' }, { type => 'text', text => ' input' }] },
    { role => 'user', content => '' } ] });
is $r->{status}, 200, 'history body ok';
like $r->{json}{content}, qr/parts\s+input/, 'input from text parts of the last non-empty user message';
like $r->{json}{content}, qr/given 2 earlier messages/, 'history imported on first run';

# legacy body
$r = $s->req(POST => '/api/chat', body => { message => 'legacy hello', session_id => 's-one' });
like $r->{json}{content}, qr/legacy hello.*given 4 earlier messages/, 'legacy {"message"} body';

# svc.v2 adds the events
$r = chat('s-v2', 'with events', extra => { metadata => { event_format => 'svc.v2' } });
is $r->{json}{svc}{schema_version}, '2.0', 'svc.v2 block';
my @types = map { $_->{type} } @{ $r->{json}{svc}{events} };
is $types[-1], 'done', 'events end with done';
ok((grep { $_ eq 'delta' } @types), 'delta events present');

# list
$r = $s->req(GET => '/api/v1/chat/sessions');
is $r->{status}, 200, 'list 200';
my @ids = map { $_->{session_id} } @{ $r->{json}{sessions} };
is $ids[0], 's-v2', 'newest first';
ok((grep { $_ eq 's-one' } @ids), 's-one listed');
ok !exists $r->{json}{sessions}[0]{schema_version}, 'summary without schema_version';
ok exists $r->{json}{next_cursor}, 'next_cursor key';
my $one = (grep { $_->{session_id} eq 's-one' } @{ $r->{json}{sessions} })[0];
is $one->{message_count}, 6, 'message_count true to the files';
is $one->{turn_count}, 3, 'turn_count';
is $one->{title}, 'first question', 'title from the first input';
is $one->{status}, 'idle', 'idle';

# paging with limit/cursor visits every session once
my (%seen, $cursor, $pages);
do {
    my $q = '/api/v1/chat/sessions?limit=2' . (defined $cursor ? "&cursor=$cursor" : '');
    $r = $s->req(GET => $q);
    is $r->{status}, 200, "page $pages" if 0;
    $seen{ $_->{session_id} }++ for @{ $r->{json}{sessions} };
    ok @{ $r->{json}{sessions} } <= 2, 'page size honoured';
    $cursor = $r->{json}{next_cursor};
    $pages++;
} while (defined $cursor && $pages < 20);
is_deeply [sort keys %seen], [sort @ids], 'cursor paging visits every session';
ok !(grep { $_ != 1 } values %seen), 'each once';

# q filters titles case-insensitively
$r = $s->req(GET => '/api/v1/chat/sessions?q=FIRST%20QUES');
is_deeply [map { $_->{session_id} } @{ $r->{json}{sessions} }], ['s-one'], 'q filter';

# detail
$r = $s->req(GET => '/api/v1/chat/sessions/s-one');
is $r->{status}, 200, 'detail 200';
is $r->{json}{session_id}, 's-one', 'detail session_id';
is $r->{json}{message_count}, 6, 'detail message_count';
$r = $s->req(GET => '/api/v1/chat/sessions/nope-missing');
is $r->{status}, 404, 'missing session 404';
is $r->{json}{error}{code}, 'session_not_found', 'session_not_found';

# messages asc / desc / paging / turns
$r = $s->req(GET => '/api/v1/chat/sessions/s-one/messages');
is $r->{status}, 200, 'messages 200';
is $r->{json}{total}, 6, 'total';
is scalar @{ $r->{json}{messages} }, 6, 'all messages';
is $r->{json}{messages}[0]{role}, 'user', 'first is user';
is $r->{json}{messages}[0]{content}, 'first question', 'first content';
is $r->{json}{messages}[0]{message_id}, 0, 'ids from 0';
ok $r->{json}{messages}[1]{raw_native}, 'raw_native';
ok $r->{json}{messages}[1]{openai_messages}, 'openai_messages';
ok !exists $r->{json}{turns}, 'no turns unless asked';
$r = $s->req(GET => '/api/v1/chat/sessions/s-one/messages?order=desc&limit=2');
is_deeply [map { $_->{message_id} } @{ $r->{json}{messages} }], [5, 4], 'desc, newest first';
is $r->{json}{next_offset}, 2, 'next_offset';
$r = $s->req(GET => '/api/v1/chat/sessions/s-one/messages?offset=2&limit=2');
is_deeply [map { $_->{message_id} } @{ $r->{json}{messages} }], [2, 3], 'asc offset';
$r = $s->req(GET => '/api/v1/chat/sessions/s-one/messages?include_turns=true');
is scalar @{ $r->{json}{turns} || [] }, 3, 'turns with include_turns';
is $s->req(GET => '/api/v1/chat/sessions/s-one/messages?order=sideways')->{status}, 400, 'bad order 400';

# tokens
$r = $s->req(GET => '/api/chat/sessions/s-one/tokens');
is $r->{status}, 200, 'tokens 200';
is $r->{json}{session_id}, 's-one', 'tokens session_id';
ok $r->{json}{cumulative_total_tokens} > 0, 'cumulative tokens';
is $s->req(GET => '/api/chat/sessions/nope-missing/tokens')->{status}, 404, 'tokens 404';

# PATCH title
$r = $s->req(PATCH => '/api/v1/chat/sessions/s-one', body => { title => 'Renamed ✓' });
is $r->{status}, 200, 'rename 200';
is $r->{json}{title}, 'Renamed ✓', 'summary with the new title';
is $s->req(GET => '/api/v1/chat/sessions/s-one')->{json}{title}, 'Renamed ✓', 'title kept';
is $s->req(PATCH => '/api/v1/chat/sessions/s-one', body => { title => '' })->{status}, 422, 'empty title 422';
is $s->req(PATCH => '/api/v1/chat/sessions/s-one', body => { title => 'x' x 201 })->{status}, 422, '201 chars 422';
is $s->req(PATCH => '/api/v1/chat/sessions/s-one', body => { title => 'é' x 200 })->{status}, 200, '200 code points ok';
is $s->req(PATCH => '/api/v1/chat/sessions/nope-missing', body => { title => 'x' })->{status}, 404, 'rename missing 404';

# archive / unarchive
$r = $s->req(POST => '/api/v1/chat/sessions/s-one/archive');
is_deeply $r->{json}, { archived => $T, session_id => 's-one' }, 'archived';
$r = $s->req(POST => '/api/v1/chat/sessions/s-one/archive');
is $r->{status}, 200, 'archive is idempotent';
@ids = map { $_->{session_id} } @{ $s->req(GET => '/api/v1/chat/sessions')->{json}{sessions} };
ok !(grep { $_ eq 's-one' } @ids), 'archived hidden by default';
@ids = map { $_->{session_id} } @{ $s->req(GET => '/api/v1/chat/sessions?include_archived=true')->{json}{sessions} };
ok((grep { $_ eq 's-one' } @ids), 'shown with include_archived');
@ids = map { $_->{session_id} } @{ $s->req(GET => '/api/v1/chat/sessions?archived_only=1')->{json}{sessions} };
is_deeply \@ids, ['s-one'], 'archived_only';
is $s->req(GET => '/api/v1/chat/sessions/s-one/messages')->{status}, 200, 'archived still readable';
$r = chat('s-one', 'refused?');
is $r->{status}, 403, 'run on archived: 403';
is $r->{headers}{'x-should-retry'}, 'false', 'archived: x-should-retry false';
is $r->{json}{error}{code}, 'session_archived', 'session_archived';
is $r->{json}{error}{type}, 'permission_error', 'permission_error';
$r = $s->req(POST => '/api/v1/chat/sessions/s-one/unarchive');
is_deeply $r->{json}, { archived => $F, session_id => 's-one' }, 'unarchived';
is chat('s-one', 'back again')->{status}, 200, 'runs again after unarchive';

# busy: another process holds the run lock
my $lockf = $s->root . '/session_s-one/.svc.run.lock';
open my $lk, '>>', $lockf or die "open $lockf: $!";
flock($lk, LOCK_EX) or die "flock: $!";
$r = chat('s-one', 'while busy');
is $r->{status}, 409, 'busy: 409';
is $r->{json}{error}{code}, 'session_busy', 'session_busy';
is $r->{headers}{'retry-after'}, '1', 'Retry-After: 1';
is $r->{headers}{'x-should-retry'}, 'true', 'busy: x-should-retry true';
is $s->req(GET => '/api/v1/chat/sessions/s-one/messages')->{status}, 200, 'reads do not wait for a run';
close $lk;
is chat('s-one', 'after busy')->{status}, 200, 'free again';

# Idempotency-Key: a completed request on the same session answers again, no second turn
my $k1 = chat('s-idem', 'pay once', headers => { 'idempotency-key' => 'key-1' });
is $k1->{status}, 200, 'idempotent request 200';
my $k2 = chat('s-idem', 'pay once', headers => { 'idempotency-key' => 'key-1' });
is $k2->{status}, 200, 'repeat 200';
is $k2->{json}{run_id}, $k1->{json}{run_id}, 'same run answered again';
is $k2->{json}{content}, $k1->{json}{content}, 'same content';
is $s->req(GET => '/api/v1/chat/sessions/s-idem')->{json}{turn_count}, 1, 'no second turn';
my $k3 = chat('s-idem', 'pay twice', headers => { 'idempotency-key' => 'key-2' });
isnt $k3->{json}{run_id}, $k1->{json}{run_id}, 'another key runs again';
my $ks = $s->sse('/api/chat', headers => { 'idempotency-key' => 'key-1' }, body => {
    stream => $T, session_id => 's-idem', messages => [{ role => 'user', content => 'pay once' }] });
is $ks->{events}[-1], '[DONE]', 'replay as a stream';
is join('', map { $_->{choices}[0]{delta}{content} // '' } grep { ref } @{ $ks->{events} }),
   $k1->{json}{content}, 'streamed replay has the stored answer';
is $s->req(GET => '/api/v1/chat/sessions/s-idem')->{json}{turn_count}, 2, 'still two turns';

# status filter
@ids = map { $_->{session_id} } @{ $s->req(GET => '/api/v1/chat/sessions?status=idle&limit=500')->{json}{sessions} };
ok((grep { $_ eq $random } @ids), 'status=idle lists idle sessions');
is $s->req(GET => '/api/v1/chat/sessions?status=bogus')->{status}, 400, 'bad status 400';

$s->stop;

# sessions disabled: session endpoints 404 sessions_disabled, chat stateless
$s = SvcTest->start(config => "sessions:\n  enabled: false\n  fsync: false\n");
for my $p ('/api/v1/chat/sessions', '/api/v1/chat/sessions/abc', '/api/v1/chat/sessions/abc/messages',
           '/api/chat/sessions/abc/tokens') {
    $r = $s->req(GET => $p);
    is $r->{status}, 404, "disabled: GET $p 404";
    is $r->{json}{error}{code}, 'sessions_disabled', 'sessions_disabled';
}
is $s->req(POST => '/api/v1/chat/sessions/abc/archive')->{json}{error}{code}, 'sessions_disabled', 'archive disabled';
$r = $s->req(POST => '/api/chat', body => { session_id => 'x', messages => [
    { role => 'user', content => 'a' }, { role => 'assistant', content => 'b' }, { role => 'user', content => 'c' } ] });
is $r->{status}, 200, 'stateless chat 200';
like $r->{json}{content}, qr/given 2 earlier messages/, 'stateless: context from the request';
ok !-e $s->root, 'nothing stored';
$s->stop;

done_testing;
