#!/usr/bin/perl
# No request costs more than its size suggests (SPEC 19, issue 35 item 4): the lists a body
# may carry have limits checked before any work (tools 128, messages / input / items /
# session_ids 10,000, tags 20, metadata 16 keys), each refusal a 422 invalid_field naming
# the list and changing nothing; duplicate tool names and tool results are found by hashing
# (a body of 20,000 tools cost 9 to 20 s of CPU before, refused now; the ms are printed,
# `make bench-bodies` compares them with a small turn of the same run).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw(time);
use SvcTest;

my $s = SvcTest->start;
my $user = [{ role => 'user', content => 'hi' }];
sub tools { my ($n, %o) = @_; [map { { type => 'function', function => { name => sprintf('t%x', $o{same} ? 0 : $_), %{ $o{extra} || {} } } } } 0 .. $n - 1] }
sub timed {
    my ($what, @req) = @_;
    my $t = time;
    my $r = $s->req(@req);
    diag sprintf('%s: %d in %.0f ms', $what, $r->{status}, (time - $t) * 1000);
    return $r;
}
sub refused {
    my ($r, $param, $name) = @_;
    is "$r->{status} " . ($r->{json} ? "$r->{json}{error}{code} $r->{json}{error}{param}" : ''),
       "422 invalid_field $param", "$name: 422 invalid_field, param $param";
}

is $s->req(POST => '/api/chat', body => { session_id => 'lim', messages => $user })->{status}, 200, 'a session';
my $before = $s->snapshot;

# tools
my $r = timed('20,000 tools', POST => '/api/chat', body => { session_id => 'lim', messages => $user, tools => tools(20000) });
refused($r, 'tools', '20,000 tools (the 1 MB body of the issue)');
like $r->{json}{error}{message}, qr/'tools' has 20000 items; at most 128/, 'the message says the limit';
refused($s->req(POST => '/api/v1/responses', body => { input => 'hi', tools => [map { { type => 'function', name => "f$_" } } 1 .. 129] }),
        'tools', 'Responses: 129 tools');
my $big = tools(128, extra => { description => 'd' x 7000 });
$r = timed('128 tools of 7 KB', POST => '/api/chat', body => { session_id => 'lim', messages => $user, tools => $big });
is $r->{status}, 200, '128 tools (about 1 MB): taken';
$r = $s->req(POST => '/api/chat', body => { session_id => 'lim', messages => $user, tools => tools(128, same => 1) });
refused($r, 'tools[1].function.name', '128 tools of one name: the duplicate is named');
$before = $s->snapshot;

# messages, input items, conversation items, export ids
my @many = map { { role => $_ % 2 ? 'assistant' : 'user', content => "m$_" } } 0 .. 10000;
refused(timed('10,001 messages', POST => '/api/chat', body => { session_id => 'lim', messages => \@many }),
        'messages', '10,001 messages');
refused($s->req(POST => '/api/v1/responses', body => { input => [map { { role => 'user', content => "i$_" } } 0 .. 10000] }),
        'input', 'Responses: 10,001 input items');
refused($s->req(POST => '/api/v1/conversations', body => { items => [map { { type => 'message', role => 'user', content => "c$_" } } 0 .. 10000] }),
        'items', 'Conversations: 10,001 items');
refused($s->req(POST => '/api/v1/chat/sessions/export', body => { session_ids => [map { "s$_" } 0 .. 10000] }),
        'session_ids', 'export: 10,001 session ids');

# tags and metadata
refused($s->req(PATCH => '/api/v1/chat/sessions/lim', body => { tags => [map { "t$_" } 1 .. 21] }), 'tags', '21 tags');
refused($s->req(PATCH => '/api/v1/chat/sessions/lim', body => { metadata => { map { ("k$_" => 'v') } 1 .. 17 } }),
        'metadata', '17 metadata keys');
refused($s->req(POST => '/api/chat', body => { session_id => 'lim', messages => $user, metadata => { map { ("k$_" => 'v') } 1 .. 17 } }),
        'metadata', 'chat: 17 metadata keys');
is $s->snapshot, $before, 'nothing on disk changed';

# tool results are matched to pending calls by hashing: many answers to one call, refused
$r = $s->req(POST => '/api/chat', body => { session_id => 'calls', messages => [{ role => 'user', content => '/tool f {}' }],
                                            tools => tools(1, extra => { name => 'f' }) });
is $r->{json}{choices}[0]{finish_reason}, 'tool_calls', 'a pending client tool call';
my $id = $r->{json}{choices}[0]{message}{tool_calls}[0]{id};
my @answers = map { { role => 'tool', tool_call_id => $id, content => "r$_" } } 1 .. 5000;
$r = timed('5,000 answers to one call', POST => '/api/chat',
           body => { session_id => 'calls', messages => [{ role => 'user', content => '/tool f {}' }, $r->{json}{choices}[0]{message}, @answers] });
is $r->{status}, 422, '5,000 answers to one call: 422';
like $r->{json}{error}{message} // '', qr/answered twice/, 'the second answer is named';

done_testing;
