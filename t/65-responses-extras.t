#!/usr/bin/perl
# The rest of the Responses API that agents use (SPEC 12.3): DELETE /api/v1/responses/{id}
# (the session's messages stay), GET .../input_items (OpenAI's list, paged both ways),
# truncation "disabled" (400 context_length_exceeded before anything is stored, where the
# window would drop messages) and store false (a run that touches no session and stores
# nothing). Bad input is a clear 4xx and changes nothing on disk.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;

my $s = SvcTest->start(workers => 2, config => "agent:\n  window_size: 4\n");
my $T = JSON::PP::true;
my $F = JSON::PP::false;

sub resp { $s->req(POST => '/api/v1/responses', body => $_[0]) }
sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} || {} }
sub snapshot { $s->snapshot(qr/^\.svc_index/) }    # "nothing changed on disk" (SvcTest)
sub refused { $s->refused(@_) }

# ---- input_items ----
my $a = resp({ conversation => 'rx-1', input => [
    { role => 'system', content => 'be brief' },
    { role => 'user', content => 'first' },
    { type => 'message', role => 'user', content => [{ type => 'input_text', text => 'second' }] } ] });
is $a->{status}, 200, 'a response' or diag $a->{body};
my $id = $a->{json}{id};
ok !exists $a->{json}{input_items}, 'the answer carries no input_items';
ok !exists $s->req(GET => "/api/v1/responses/$id")->{json}{input_items}, 'nor does GET';
my $l = $s->req(GET => "/api/v1/responses/$id/input_items");
is $l->{status}, 200, 'input_items: 200';
is $l->{json}{object}, 'list', 'object list';
my @d = @{ $l->{json}{data} };
is scalar @d, 3, 'three items';
is $d[0]{content}[0]{text}, 'second', 'newest first by default';
is $d[0]{content}[0]{type}, 'input_text', 'text as input_text parts';
is $d[2]{role}, 'system', 'the oldest last';
is $d[2]{type}, 'message', 'typed message';
like $d[1]{id}, qr/^msg_[0-9a-f]{32}$/, 'each item has an id';
is $l->{json}{first_id}, $d[0]{id}, 'first_id';
is $l->{json}{last_id}, $d[2]{id}, 'last_id';
is $l->{json}{has_more}, $F, 'has_more false';
my $p = $s->req(GET => "/api/v1/responses/$id/input_items?order=asc&limit=2")->{json};
is_deeply [map { $_->{id} } @{ $p->{data} }], [$d[2]{id}, $d[1]{id}], 'asc, limit 2';
is $p->{has_more}, $T, 'has_more true';
$p = $s->req(GET => "/api/v1/responses/$id/input_items?order=asc&after=$p->{last_id}")->{json};
is_deeply [map { $_->{id} } @{ $p->{data} }], [$d[0]{id}], 'after the last id: the rest';
$p = $s->req(GET => "/api/v1/responses/$id/input_items")->{json};
is_deeply [map { $_->{id} } @{ $p->{data} }], [map { $_->{id} } @d], 'ids stable between requests';
my $b = resp({ previous_response_id => $id, input => 'plain string' });
my $bl = $s->req(GET => "/api/v1/responses/$b->{json}{id}/input_items")->{json};
is $bl->{data}[0]{content}[0]{text}, 'plain string', 'a string input: one user message item';
is $bl->{data}[0]{role}, 'user', 'role user';
refused($s->req(GET => "/api/v1/responses/$id/input_items?order=sideways"), 400, 'invalid_query', 'order', 'a bad order');
refused($s->req(GET => "/api/v1/responses/$id/input_items?limit=0"), 400, 'invalid_query', 'limit', 'limit 0');
refused($s->req(GET => "/api/v1/responses/$id/input_items?after=msg_nope"), 400, 'invalid_query', 'after', 'an unknown after');
refused($s->req(GET => '/api/v1/responses/resp_00000000000000000000000000000000/input_items'), 404,
        'response_not_found', undef, 'input_items of an unknown response');

# ---- delete ----
my $count = session('rx-1')->{message_count};
my $before = snapshot();
refused($s->req(DELETE => '/api/v1/responses/resp_00000000000000000000000000000000'), 404, 'response_not_found',
        undef, 'delete an unknown response', $before);
refused($s->req(DELETE => '/api/v1/responses/not-an-id'), 404, 'response_not_found', undef, 'delete a bad id', $before);
my $r = $s->req(DELETE => "/api/v1/responses/$id");
is $r->{status}, 200, 'delete: 200';
is_deeply $r->{json}, { id => $id, object => 'response', deleted => $T }, 'delete: the OpenAI shape';
refused($s->req(GET => "/api/v1/responses/$id"), 404, 'response_not_found', undef, 'deleted: GET 404');
refused($s->req(GET => "/api/v1/responses/$id/input_items"), 404, 'response_not_found', undef, 'deleted: input_items 404');
refused($s->req(DELETE => "/api/v1/responses/$id"), 404, 'response_not_found', undef, 'deleted twice: 404');
is session('rx-1')->{message_count}, $count, 'the session\'s messages stay';
is $s->req(DELETE => "/api/responses/$b->{json}{id}")->{status}, 200, 'delete through /api/responses';

# ---- truncation ----
# window_size 4: rx-1 holds 4 messages; a fifth with truncation disabled is refused
$before = snapshot();
refused(resp({ conversation => 'rx-1', input => 'one more', truncation => 'disabled' }), 400,
        'context_length_exceeded', 'truncation', 'truncation disabled past the window', $before);
refused(resp({ conversation => 'rx-1', input => 'x', truncation => 'sometimes' }), 422, 'invalid_field', 'truncation',
        'truncation neither auto nor disabled', $before);
is session('rx-1')->{message_count}, $count, 'nothing stored';
$r = resp({ conversation => 'rx-1', input => 'one more', truncation => 'auto' });
is $r->{status}, 200, 'truncation auto: the window slides';
is $r->{json}{truncation}, 'auto', 'truncation echoed';
$r = resp({ conversation => 'rx-new', input => 'fits', truncation => 'disabled' });
is $r->{status}, 200, 'truncation disabled within the window: 200';
is $r->{json}{truncation}, 'disabled', 'truncation disabled echoed';
# a run whose own tool steps outgrow the window fails the same way
$r = resp({ conversation => 'rx-new', input => '/tool clock {}', truncation => 'disabled' });
is $r->{status}, 400, 'a run that outgrows the window: 400';
is $r->{json}{error}{code}, 'context_length_exceeded', 'context_length_exceeded';

# ---- store false ----
$before = snapshot();
$r = resp({ input => [{ role => 'user', content => 'earlier' }, { role => 'assistant', content => 'noted' },
                      { role => 'user', content => 'unsaved' }], store => $F });
is $r->{status}, 200, 'store false: 200' or diag $r->{body};
like $r->{json}{output}[0]{content}[0]{text}, qr/^Echo: unsaved \(I was given 2 earlier messages/,
     'store false: the input\'s history is the context';
is $r->{json}{store}, $F, 'store false echoed';
ok !defined $r->{json}{conversation}, 'no conversation';
is snapshot(), $before, 'store false: nothing changed on disk';
refused($s->req(GET => "/api/v1/responses/$r->{json}{id}"), 404, 'response_not_found', undef, 'store false: not stored');
refused(resp({ conversation => 'rx-1', input => 'x', store => $F }), 422, 'invalid_field', 'store',
        'store false with a conversation', $before);
# client tools without a session: the call, then the whole input with its result
$r = resp({ input => '/tool get_weather {}', store => $F,
            tools => [{ type => 'function', name => 'get_weather' }] });
my $fc = $r->{json}{output}[0];
is $fc->{type}, 'function_call', 'store false: a client tool call';
$r = resp({ store => $F, tools => [{ type => 'function', name => 'get_weather' }], input => [
    { role => 'user', content => '/tool get_weather {}' },
    { type => 'function_call', call_id => $fc->{call_id}, name => 'get_weather', arguments => '{}' },
    { type => 'function_call_output', call_id => $fc->{call_id}, output => 'hail' } ] });
is $r->{json}{output}[0]{content}[0]{text}, 'Echo: tool get_weather returned hail', 'store false: the result answered';
is snapshot(), $before, 'store false with tools: nothing changed on disk';

$s->stop;
done_testing;
