#!/usr/bin/perl
# OpenAI shapes for stock clients (SPEC 4.1, issue 10): GET /api/v1/models[/id], the
# Responses API (POST /api/v1/responses, /api/responses, GET /api/v1/responses/{id}) with
# conversations on sessions, its event stream, its errors (nothing changes on disk), and the
# retry headers every error carries.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;

my $s = SvcTest->start(workers => 2);
my $T = JSON::PP::true;
my $F = JSON::PP::false;

sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} || {} }
sub resp { $s->req(POST => '/api/v1/responses', body => $_[0], headers => $_[1] || {}) }
sub stored_ids {
    opendir my $d, $s->root . '/.svc_responses' or return ();
    my @ids = sort map { /^(resp_[0-9a-f]+)\.json$/ ? $1 : () } readdir $d;
    return @ids;
}
sub snapshot { $s->snapshot() }    # "nothing changed on disk" (SvcTest)
sub err_ok {
    my ($r, $status, $code, $name, $param) = @_;
    is $r->{status}, $status, "$name: $status";
    is $r->{json}{error}{code}, $code, "$name: $code";
    is $r->{json}{error}{param}, $param, "$name: param $param" if defined $param;
    is $r->{headers}{'x-should-retry'}, 'false', "$name: x-should-retry false"
        if $status >= 400 && $status < 500;
}

# ---- models ----
my $r = $s->req(GET => '/api/v1/models');
is $r->{status}, 200, 'models: 200';
is $r->{json}{object}, 'list', 'models: object list';
is scalar @{ $r->{json}{data} }, 1, 'one model';
my $m = $r->{json}{data}[0];
is_deeply [sort keys %$m], [qw(created id object owned_by)], 'model object keys';
is $m->{id}, 'echo-1', 'the configured model';
is $m->{object}, 'model', 'object model';
like $m->{created}, qr/^\d+$/, 'created is a unix time';
$r = $s->req(GET => '/api/v1/models/echo-1');
is_deeply $r->{json}, $m, 'models/{id}: the same object';
err_ok($s->req(GET => '/api/v1/models/gpt-4o'), 404, 'model_not_found', 'another model id');
like $s->req(GET => '/api/v1/models/gpt-4o')->{json}{error}{message}, qr/echo-1/, 'the message names the served model';
is $s->req(HEAD => '/api/v1/models')->{status}, 200, 'HEAD models';
err_ok($s->req(POST => '/api/v1/models', body => {}), 405, 'method_not_allowed', 'POST models');

# a chat request naming another model is answered by the configured one, and says so
$r = $s->req(POST => '/api/v1/chat/completions', body => { model => 'gpt-4o', session_id => 'm-1',
    messages => [{ role => 'user', content => 'hi' }] });
is $r->{json}{model}, 'echo-1', 'chat: model names the model that answered';

# ---- Responses API, non-streaming ----
$r = resp({ model => 'gpt-4o', input => 'hello there', conversation => 'rs-1' });
is $r->{status}, 200, 'responses: 200';
my $o = $r->{json};
like $o->{id}, qr/^resp_[0-9a-f]{32}$/, 'id resp_<hex>';
is $o->{object}, 'response', 'object response';
is $o->{status}, 'completed', 'status completed';
is $o->{model}, 'echo-1', 'model names the model that answered';
like $o->{created_at}, qr/^\d+$/, 'created_at';
is scalar @{ $o->{output} }, 1, 'one output item';
is $o->{output}[0]{type}, 'message', 'a message item';
is $o->{output}[0]{role}, 'assistant', 'assistant';
is $o->{output}[0]{status}, 'completed', 'item completed';
like $o->{output}[0]{id}, qr/^msg_[0-9a-f]+$/, 'item id';
is $o->{output}[0]{content}[0]{type}, 'output_text', 'output_text';
like $o->{output}[0]{content}[0]{text}, qr/^Echo: hello there \(I was given 0 earlier messages\.\)$/, 'the answer';
is_deeply $o->{output}[0]{content}[0]{annotations}, [], 'annotations []';
for my $k (qw(input_tokens output_tokens total_tokens)) {
    like $o->{usage}{$k}, qr/^\d+$/, "usage.$k";
}
is $o->{usage}{total_tokens}, $o->{usage}{input_tokens} + $o->{usage}{output_tokens}, 'total = in + out';
is_deeply $o->{conversation}, { id => 'rs-1' }, 'conversation names the session';
is $o->{session_id}, 'rs-1', 'session_id';
is $r->{headers}{'x-session-id'}, 'rs-1', 'X-Session-Id header';
like $o->{run_id}, qr/^run-[0-9a-f]{16}$/, 'run_id';
is $o->{store}, $T, 'store defaults to true';
ok !defined $o->{previous_response_id}, 'previous_response_id null';
ok !defined $o->{error}, 'error null';
my $sc = session('rs-1');
is $sc->{run_count}, 1, 'same sidecar as /api/chat: run_count 1';
is $sc->{status}, 'idle', 'status idle';
is $sc->{message_count}, 2, 'two messages stored';
my @tl = $s->turn_lines('rs-1');
is scalar @tl, 1, 'one turn line';
is $tl[0]{run_id}, $o->{run_id}, 'turn line of the run';
is $tl[0]{events}[-1]{type}, 'done', 'turn line events end with done';

# stored, and GET returns it as answered
ok((grep { $_ eq $o->{id} } stored_ids()), 'stored under .svc_responses');
$r = $s->req(GET => "/api/v1/responses/$o->{id}");
is $r->{status}, 200, 'GET stored response';
is_deeply $r->{json}, $o, 'GET returns the response as answered';
is_deeply $s->req(GET => "/api/responses/$o->{id}")->{json}, $o, 'GET /api/responses/{id} too';

# the session continues with conversation as an object, with input as a message list
$r = resp({ input => [{ role => 'user', content => [{ type => 'input_text', text => 'second' }] }],
            conversation => { id => 'rs-1' } });
like $r->{json}{output}[0]{content}[0]{text}, qr/second \(I was given 2 earlier messages/, 'conversation {id}: sees the first turn';
my $second = $r->{json}{id};

# previous_response_id continues that response's session; only the new input is sent
$r = $s->req(POST => '/api/responses', body => { input => 'third', previous_response_id => $second });
is $r->{status}, 200, '/api/responses alias';
like $r->{json}{output}[0]{content}[0]{text}, qr/third \(I was given 4 earlier messages/, 'previous_response_id: continues the session';
is $r->{json}{session_id}, 'rs-1', 'same session';
is $r->{json}{previous_response_id}, $second, 'previous_response_id echoed';
is session('rs-1')->{message_count}, 6, 'six messages';

# history in the first request of a new session is imported (as /api/chat does)
$r = resp({ input => [{ role => 'user', content => 'earlier q' }, { role => 'assistant', content => 'earlier a' },
                      { type => 'message', role => 'user', content => 'now' }], conversation => 'rs-hist' });
like $r->{json}{output}[0]{content}[0]{text}, qr/now \(I was given 2 earlier messages/, 'history imported on the first run';

# store false: answered, not stored
my @before = stored_ids();
$r = resp({ input => 'not kept', store => $F });
is $r->{status}, 200, 'store false: 200';
is $r->{json}{store}, $F, 'store false echoed';
is_deeply [stored_ids()], \@before, 'store false: nothing stored';
err_ok($s->req(GET => "/api/v1/responses/$r->{json}{id}"), 404, 'response_not_found', 'store false: GET 404');
like $r->{json}{session_id}, qr/^sess-[0-9a-f]{16}$/, 'no session named: a new one';

# session by metadata.session_id and X-Session-Id
$r = resp({ input => 'meta', metadata => { session_id => 'rs-meta' } });
is $r->{json}{session_id}, 'rs-meta', 'metadata.session_id names the session';
$r = resp({ input => 'hdr' }, { 'x-session-id' => 'rs-hdr' });
is $r->{json}{session_id}, 'rs-hdr', 'X-Session-Id names the session';
$r = resp({ input => 'hdr' }, { 'x-session-id' => '.bad' });
is_deeply [$r->{status}, $r->{json}{error}{code}, $r->{json}{error}{param}], [400, 'invalid_session_id', 'X-Session-Id'],
          'an X-Session-Id that is no session id: 400 naming the header';
$r = resp({ input => 'x', metadata => { session_id => '../x' } });
is_deeply [$r->{status}, $r->{json}{error}{param}], [400, 'metadata.session_id'],
          'a metadata.session_id that is no session id: 400 naming it (it said session_id)';

# a tool turn is text, not a function_call awaiting output
$r = resp({ input => '/tool clock {}', conversation => 'rs-tool' });
is_deeply [map { $_->{type} } @{ $r->{json}{output} }], ['message'], 'tool turn: only a message item';
like $r->{json}{output}[0]{content}[0]{text}, qr/^Tool clock returned: \d{4}-/, 'tool turn: the result as text';
@tl = $s->turn_lines('rs-tool');
is $tl[0]{tool_trace}[0]{tool}, 'clock', 'tool turn: in the turn line tool_trace';
is_deeply [map { $_->{type} } grep { $_->{type} =~ /^tool_/ } @{ $tl[0]{events} }], ['tool_start', 'tool_result'],
    'tool turn: tool events in the turn line';

# svc.v2 through metadata.event_format: the run's events in the object
$r = resp({ input => 'with events', conversation => 'rs-v2', metadata => { event_format => 'svc.v2' } });
my $ev = $r->{json}{svc}{events};
is $ev->[0]{type}, 'phase', 'svc.v2: events start with phase';
is $ev->[-1]{type}, 'done', 'svc.v2: events end with done';
is_deeply [map { $_->{seq} } @$ev], [1 .. scalar @$ev], 'svc.v2: seq 1..n';

# ---- streaming ----
my $st = $s->sse('/api/v1/responses', body => { input => 'stream me please', conversation => 'rs-1', stream => $T });
is $st->{status}, 200, 'stream: 200';
like $st->{headers}{'content-type'}, qr{^text/event-stream}, 'stream: text/event-stream';
my @types = map { $_->{type} } grep { ref } @{ $st->{events} };
my @nodelta = grep { $_ ne 'response.output_text.delta' } @types;
is_deeply \@nodelta, [qw(response.created response.in_progress response.output_item.added response.content_part.added
    response.output_text.done response.content_part.done response.output_item.done response.completed)],
    'stream: event types in order';
my @deltas = grep { ref && $_->{type} eq 'response.output_text.delta' } @{ $st->{events} };
ok @deltas >= 3, 'stream: several text deltas';
my $text = join '', map { $_->{delta} } @deltas;
like $text, qr/^Echo: stream me please \(I was given 6 earlier messages\.\)$/, 'stream: deltas make the answer';
is_deeply [map { $_->{sequence_number} } grep { ref } @{ $st->{events} }], [0 .. $#types], 'stream: sequence_number 0..n';
my ($created) = grep { ref && $_->{type} eq 'response.created' } @{ $st->{events} };
my ($completed) = grep { ref && $_->{type} eq 'response.completed' } @{ $st->{events} };
is $created->{response}{status}, 'in_progress', 'created: in_progress';
is $completed->{response}{status}, 'completed', 'completed: completed';
is $completed->{response}{id}, $created->{response}{id}, 'same response id';
is $completed->{response}{output}[0]{content}[0]{text}, $text, 'completed: the text';
ok $completed->{response}{usage}{output_tokens} > 0, 'completed: usage';
is_deeply $s->req(GET => "/api/v1/responses/$completed->{response}{id}")->{json}, $completed->{response},
    'stream: stored as completed';
my ($done) = grep { ref && $_->{type} eq 'response.output_text.done' } @{ $st->{events} };
is $done->{text}, $text, 'output_text.done: the whole text';
is $done->{item_id}, $deltas[0]{item_id}, 'item ids agree';

# a streamed tool turn: svc.event reports, no function_call item
$st = $s->sse('/api/v1/responses', body => { input => '/tool clock {}', conversation => 'rs-tool', stream => $T });
my @items = grep { ref && $_->{type} eq 'response.output_item.added' } @{ $st->{events} };
is_deeply [map { $_->{item}{type} } @items], ['message'], 'stream tool turn: only a message item';
my @svc = map { $_->{svc_event}{type} } grep { ref && $_->{type} eq 'svc.event' } @{ $st->{events} };
is_deeply \@svc, ['tool_start', 'tool_result'], 'stream tool turn: tool events as svc.event';

# ---- Idempotency-Key: a retry (stock SDKs send a key with every POST) gets the same
# response and runs nothing again; streamed, the same text and id as events ----
my %key1 = ('Idempotency-Key' => 'stainless-node-retry-k1');
my $k1 = resp({ input => 'keyed question', conversation => 'rs-key' }, \%key1);
is $k1->{status}, 200, 'keyed: 200';
my $count = session('rs-key')->{message_count};
my $runs = session('rs-key')->{run_count};
is $count, 2, 'keyed: one turn stored';
my $k2 = resp({ input => 'keyed question', conversation => 'rs-key' }, \%key1);
is $k2->{status}, 200, 'keyed retry: 200';
is_deeply $k2->{json}, $k1->{json}, 'keyed retry: the same response object';
is session('rs-key')->{message_count}, $count, 'keyed retry: no message stored';
is session('rs-key')->{run_count}, $runs, 'keyed retry: no run';
$st = $s->sse('/api/v1/responses', body => { input => 'keyed question', conversation => 'rs-key', stream => $T },
              headers => \%key1);
is $st->{status}, 200, 'keyed streamed retry: 200';
is_deeply [map { $_->{type} } grep { ref } @{ $st->{events} }],
    [qw(response.created response.in_progress response.output_item.added response.content_part.added
        response.output_text.delta response.output_text.done response.content_part.done
        response.output_item.done response.completed)], 'keyed streamed retry: the event sequence';
($completed) = grep { ref && $_->{type} eq 'response.completed' } @{ $st->{events} };
is_deeply $completed->{response}, $k1->{json}, 'keyed streamed retry: completed is the stored response';
my ($kd) = grep { ref && $_->{type} eq 'response.output_text.delta' } @{ $st->{events} };
is $kd->{delta}, $k1->{json}{output}[0]{content}[0]{text}, 'keyed streamed retry: the text in one delta';
is $kd->{item_id}, $k1->{json}{output}[0]{id}, 'keyed streamed retry: the same item id';
is session('rs-key')->{message_count}, $count, 'keyed streamed retry: no message stored';
opendir my $kdir, $s->root . '/.svc_responses' or die;
my @keyfiles = grep { /^key_[0-9a-f]{64}\.json$/ } readdir $kdir;
is scalar @keyfiles, 1, 'one key file, named by the hash of the key';
my $k3 = resp({ input => 'keyed question', conversation => 'rs-key' }, { 'Idempotency-Key' => 'another' });
isnt $k3->{json}{id}, $k1->{json}{id}, 'another key: a new response';
is session('rs-key')->{message_count}, $count + 2, 'another key: a new turn';
# store false: nothing to replay, so the key is not recorded and a retry runs again
my %key4 = ('Idempotency-Key' => 'unstored');
my $u1 = resp({ input => 'not stored', store => $F }, \%key4);
my $u2 = resp({ input => 'not stored', store => $F }, \%key4);
isnt $u2->{json}{id}, $u1->{json}{id}, 'store false: a keyed retry runs again';
is session('rs-key')->{message_count}, $count + 2, 'store false: no session touched';

# ---- errors: the right status, x-should-retry false, nothing on disk changes ----
my $snap = snapshot();
err_ok(resp('{"input": '), 400, 'invalid_json', 'bad JSON');
err_ok(resp({}), 422, 'missing_field', 'no input', 'input');
err_ok(resp({ input => 5 }), 422, 'invalid_field', 'input a number', 'input');
err_ok(resp({ input => '' }), 422, 'invalid_field', 'input empty', 'input');
err_ok(resp({ input => [] }), 422, 'missing_field', 'input empty list', 'input');
err_ok(resp({ input => [{ role => 'assistant', content => 'only me' }] }), 422, 'missing_field', 'no user message', 'input');
err_ok(resp({ input => ['x'] }), 422, 'invalid_field', 'item a string', 'input[0]');
err_ok(resp({ input => [{ type => 'function_call_output', call_id => 'c', output => 'x' }] }), 422, 'invalid_field',
       'function_call_output answering no pending call', 'input[0].call_id');
err_ok(resp({ input => [{ role => 'user', content => 'x' }, { type => 'function_call', call_id => 'c', name => 'f', arguments => 'not json' },
                       { type => 'function_call_output', call_id => 'c', output => 'x' }] }), 422, 'invalid_field',
       'function_call arguments that are no JSON object (stored as {})', 'input[1].arguments');
err_ok(resp({ input => [{ role => 'user', content => 'x' }, { type => 'function_call', call_id => 'c', name => '', arguments => '{}' },
                       { type => 'function_call_output', call_id => 'c', output => 'x' }] }), 422, 'invalid_field',
       'function_call with an empty name', 'input[1].name');
err_ok(resp({ input => [{ type => 'computer_call_output', call_id => 'c' }] }), 422, 'invalid_field',
       'an item type svc does not take', 'input[0].type');
err_ok(resp({ input => [{ role => 'tool', content => 'x' }] }), 422, 'invalid_field', 'bad role', 'input[0].role');
err_ok(resp({ input => [{ role => 'user', content => 7 }] }), 422, 'invalid_field', 'content a number', 'input[0].content');
err_ok(resp({ input => [{ role => 'user', content => [{ type => 'input_text', text => 1 }] }] }), 422, 'invalid_field',
       'part text a number', 'input[0].content[0].text');
err_ok(resp({ input => 'x', stream => 'yes' }), 422, 'invalid_field', 'stream a string', 'stream');
err_ok(resp({ input => 'x', store => 1 }), 422, 'invalid_field', 'store a number', 'store');
err_ok(resp({ input => 'x', metadata => { a => 1 } }), 422, 'invalid_field', 'metadata value a number', 'metadata.a');
err_ok(resp({ input => 'x', metadata => [] }), 422, 'invalid_field', 'metadata a list', 'metadata');
err_ok(resp({ input => 'x', metadata => { k => 'v' x 513 } }), 422, 'invalid_field', 'metadata value of 513 characters', 'metadata.k');
err_ok(resp({ input => 'x', conversation => 5 }), 422, 'invalid_field', 'conversation a number', 'conversation');
err_ok(resp({ input => 'x', conversation => {} }), 422, 'missing_field', 'conversation without id', 'conversation.id');
# a bad id is named as sent (it was named session_id, a field the request did not have)
err_ok(resp({ input => 'x', conversation => '../x' }), 400, 'invalid_session_id', 'conversation ../x', 'conversation');
err_ok(resp({ input => 'x', conversation => { id => '.x' } }), 400, 'invalid_session_id', 'conversation.id .x', 'conversation.id');
err_ok(resp({ input => 'x', conversation => 'rs-1', previous_response_id => $second }), 422, 'invalid_field',
       'conversation and previous_response_id', 'conversation');
err_ok(resp({ input => 'x', conversation => '../etc' }), 400, 'invalid_session_id', 'traversal in conversation');
err_ok(resp({ input => 'x', conversation => '.hidden' }), 400, 'invalid_session_id', 'dot id');
err_ok(resp({ input => 'x', previous_response_id => 'resp_0123456789abcdef0123456789abcdef' }), 404,
       'response_not_found', 'unknown previous_response_id', 'previous_response_id');
err_ok(resp({ input => 'x', previous_response_id => '../../x' }), 404, 'response_not_found', 'bad previous_response_id',
       'previous_response_id');
err_ok($s->req(GET => '/api/v1/responses/resp_..%2F..%2Fagents'), 404, 'response_not_found', 'GET traversal id');
err_ok($s->req(GET => '/api/v1/responses/resp_0123456789abcdef0123456789abcdef'), 404, 'response_not_found', 'GET unknown id');
err_ok($s->req(PUT => "/api/v1/responses/$second", body => {}), 405, 'method_not_allowed', 'PUT a response');
is snapshot(), $snap, 'refused requests changed nothing on disk';

# archived: 403, final; busy: 409 with Retry-After and x-should-retry true
is $s->req(POST => '/api/v1/chat/sessions/rs-hdr/archive')->{status}, 200, 'archive rs-hdr';
$snap = snapshot();
$r = resp({ input => 'refused', conversation => 'rs-hdr' });
err_ok($r, 403, 'session_archived', 'responses on an archived session');
is $r->{json}{error}{type}, 'permission_error', 'archived: permission_error';
ok !defined $r->{headers}{'retry-after'}, 'archived: no Retry-After';
$r = $s->req(POST => '/api/chat', body => { session_id => 'rs-hdr', messages => [{ role => 'user', content => 'x' }] });
err_ok($r, 403, 'session_archived', 'chat on an archived session');
$r = $s->req(POST => '/api/chat/runs', body => { session_id => 'rs-hdr', messages => [{ role => 'user', content => 'x' }] });
err_ok($r, 403, 'session_archived', 'async run on an archived session');
is snapshot(), $snap, 'archived refusals changed nothing on disk';

{
    use Fcntl qw(:flock);
    my $lockf = $s->root . '/session_rs-1/.svc.run.lock';
    open my $lk, '>>', $lockf or die "open $lockf: $!";
    flock($lk, LOCK_EX) or die "flock: $!";
    $r = resp({ input => 'busy?', conversation => 'rs-1' });
    is $r->{status}, 409, 'busy: 409';
    is $r->{json}{error}{code}, 'session_busy', 'session_busy';
    is $r->{headers}{'retry-after'}, '1', 'busy: Retry-After 1';
    is $r->{headers}{'x-should-retry'}, 'true', 'busy: x-should-retry true';
    close $lk;
}

# other 4xx: x-should-retry false; 2xx: no such header
err_ok($s->req(GET => '/api/nope'), 404, 'not_found', 'unknown route');
err_ok($s->req(GET => '/api/v1/chat/sessions/nope'), 404, 'session_not_found', 'unknown session');
err_ok($s->req(GET => '/api/chat/runs/run-0000000000000000'), 404, 'run_not_found', 'unknown run');
ok !defined $s->req(GET => '/api/health')->{headers}{'x-should-retry'}, '200: no x-should-retry';

# the store cannot be written (a file where its directory should be): the turn is answered
# and kept in the session, the answer says store false; lookups are io_error, not a lie
my $rd = $s->root . '/.svc_responses';
rename $rd, "$rd.away" or die "rename: $!";
SvcTest::write_file($rd, "not a directory\n");
$r = resp({ input => 'store broken', conversation => 'rs-disk' });
is $r->{status}, 200, 'store broken: the turn is answered';
is $r->{json}{store}, $F, 'store broken: store false in the answer';
is session('rs-disk')->{message_count}, 2, 'store broken: the turn is in the session';
like $s->log, qr/response \S+ could not be stored/, 'store broken: logged';
$r = resp({ input => 'x', previous_response_id => $second });
is $r->{status}, 500, 'store broken: previous_response_id lookup 500';
is $r->{json}{error}{code}, 'io_error', 'store broken: io_error';
unlink $rd;
rename "$rd.away", $rd or die "rename back: $!";
is $s->req(GET => "/api/v1/responses/$second")->{status}, 200, 'store back: found again';
$s->stop;

# ---- 401 carries WWW-Authenticate: Bearer; the token is needed on the new routes ----
my $tok = 'tok-r3sp0nses';
my $a = SvcTest->start(config => "server:\n  api_token: \"$tok\"\n");
for my $p (['GET', '/api/v1/models'], ['POST', '/api/v1/responses'], ['GET', '/api/v1/responses/resp_0123456789abcdef0123456789abcdef']) {
    $r = $a->req($p->[0] => $p->[1], ($p->[0] eq 'POST' ? (body => { input => 'x' }) : ()));
    err_ok($r, 401, 'missing_token', "$p->[0] $p->[1] without token");
    is $r->{headers}{'www-authenticate'}, 'Bearer', "$p->[1]: WWW-Authenticate: Bearer";
}
$r = $a->req(GET => '/api/v1/models', headers => { authorization => 'Bearer nope' });
err_ok($r, 401, 'invalid_token', 'wrong token');
is $r->{headers}{'www-authenticate'}, 'Bearer', 'invalid_token: WWW-Authenticate: Bearer';
is $a->req(GET => '/api/v1/models', headers => { authorization => "Bearer $tok" })->{status}, 200, 'with the token: 200';
$a->stop;

# ---- a run that fails: response.failed then error (stream), the error object (plain) ----
my $to = SvcTest->start(config => "server:\n  run_timeout_s: 2\n", env => { SVC_PING_INTERVAL_S => 1 });
# pings while the model is silent (interval shortened to 1 s)
$st = $to->sse('/api/v1/responses', body => { input => '/slow 1500 slow words', stream => $T },
               stop_if => sub { grep { $_ eq 'ping' } @{ $_[1] } });
ok((grep { $_ eq 'ping' } @{ $st->{comments} }), 'stream: ": ping" while the model is silent');
ok(!(grep { ref && $_->{type} eq 'response.output_text.delta' } @{ $st->{events} }), 'stream: before any text');
$st = $to->sse('/api/v1/responses', body => { input => '/slow 900 a b c d e f', conversation => 'rs-to', stream => $T });
@types = map { $_->{type} } grep { ref } @{ $st->{events} };
is_deeply [@types[-2, -1]], ['response.failed', 'error'], 'failed stream: response.failed, then error';
my ($failed) = grep { ref && $_->{type} eq 'response.failed' } @{ $st->{events} };
is $failed->{response}{status}, 'failed', 'response.failed: status failed';
is $failed->{response}{error}{code}, 'run_timeout', 'response.failed: error code';
is $st->{events}[-1]{error}{code}, 'run_timeout', 'error event: error.code';
is $st->{events}[-1]{code}, 'run_timeout', 'error event: code';
is_deeply $to->req(GET => "/api/v1/responses/$failed->{response}{id}")->{json}{status}, 'failed', 'failed response stored';
is $to->req(GET => '/api/v1/chat/sessions/rs-to')->{json}{status}, 'cancelled', 'session: cancelled (timeout)';
$r = $to->req(POST => '/api/v1/responses', body => { input => '/slow 900 a b c d e f', conversation => 'rs-to' });
is $r->{status}, 504, 'plain: run_timeout 504';
is $r->{json}{error}{code}, 'run_timeout', 'plain: run_timeout';
is $r->{headers}{'x-should-retry'}, 'false', 'a 5xx after the run began: x-should-retry false';
$to->stop;

# ---- sessions disabled: stateless answers, no conversations ----
my $nl = SvcTest->start(config => "sessions:\n  enabled: false\n");
$r = $nl->req(POST => '/api/v1/responses', body => { input => 'stateless' });
is $r->{status}, 200, 'stateless: 200';
is $r->{json}{store}, $F, 'stateless: store false';
ok !defined $r->{json}{conversation}, 'stateless: no conversation';
err_ok($nl->req(POST => '/api/v1/responses', body => { input => 'x', conversation => 'c1' }), 404, 'sessions_disabled',
       'stateless: conversation refused');
ok !-d $nl->root . '/.svc_responses', 'stateless: nothing stored';
$nl->stop;

done_testing;
