#!/usr/bin/perl
# Client-side function tools (SPEC 12.1) through nginx and real workers: chat completions
# (plain and streamed) and the Responses API return the echo model's call of a client tool,
# the session stores it as a Strands toolUse with pending_tool_calls in its summary, the next
# request's results (trailing tool messages, the whole history resent or not;
# function_call_output items) become a toolResult and the model goes on; new input while
# calls are pending gets error results first; bad input (unknown or answered call_id, a
# name clashing with svc's tools, malformed tools and items) is a 4xx that changes nothing
# on disk; the openai provider passes the tools and tool_choice to the model server and its
# calls back.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use SvcTest;
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $s = SvcTest->start(workers => 2);
my $WEATHER = { type => 'function', function => { name => 'get_weather', description => 'Weather of a city',
    parameters => { type => 'object', properties => { city => { type => 'string' } } } } };
my $RWEATHER = { type => 'function', name => 'get_weather', description => 'Weather of a city',
    parameters => { type => 'object', properties => { city => { type => 'string' } } } };

sub chat { $s->req(POST => '/api/v1/chat/completions', body => $_[0]) }
sub resp { $s->req(POST => '/api/v1/responses', body => $_[0]) }
sub summary { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} || {} }
sub natives {
    my $r = $s->req(GET => "/api/v1/chat/sessions/$_[0]/messages");
    return [ map { $_->{raw_native} } @{ $r->{json}{messages} || [] } ];
}
sub snapshot { $s->snapshot(qr/^\.svc_index/) }    # "nothing changed on disk" (SvcTest)
sub refused { $s->refused(@_) }

# ---- chat completions, not streamed ----
my $sid = 'ct-chat';
my @hist = ({ role => 'user', content => '/tool get_weather {"city":"Paris"}' });
my $r = chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tools => [$WEATHER],
               tool_choice => 'auto', parallel_tool_calls => JSON::PP::true });
is $r->{status}, 200, 'chat: 200' or diag $r->{body};
my $c = $r->{json}{choices}[0];
is $c->{finish_reason}, 'tool_calls', 'chat: finish_reason tool_calls';
is $c->{message}{content}, undef, 'chat: content null beside the calls';
my $tc = $c->{message}{tool_calls}[0];
like $tc->{id}, qr/^call_[0-9a-f]+$/, 'chat: the call has an id';
is $tc->{type}, 'function', 'chat: type function';
is $tc->{function}{name}, 'get_weather', 'chat: the client tool named';
is_deeply decode_json($tc->{function}{arguments}), { city => 'Paris' }, 'chat: its arguments';
my $sum = summary($sid);
is $sum->{status}, 'idle', 'summary: idle';
is $sum->{pending_tool_calls}[0]{id}, $tc->{id}, 'summary: pending_tool_calls names the call';
my $n = natives($sid);
is scalar @$n, 2, 'two messages stored';
is $n->[1]{content}[0]{toolUse}{toolUseId}, $tc->{id}, 'the call stored as a Strands toolUse';
is $n->[1]{content}[0]{toolUse}{name}, 'get_weather', 'toolUse name';
is_deeply $n->[1]{content}[0]{toolUse}{input}, { city => 'Paris' }, 'toolUse input';

# bad results change nothing
my $before = snapshot();
like $before, qr/message_1\.json/, 'the snapshot sees the message files';
push @hist, $c->{message};
refused(chat({ model => 'echo-1', session_id => $sid, tools => [$WEATHER],
               messages => [@hist, { role => 'tool', tool_call_id => 'call_nosuch', content => 'x' }] }),
        422, 'invalid_field', 'messages[2].tool_call_id', 'unknown call_id', $before);
refused(chat({ model => 'echo-1', session_id => $sid,
               messages => [@hist, { role => 'tool', content => 'x' }] }),
        422, 'missing_field', 'messages[2].tool_call_id', 'tool message without tool_call_id', $before);
refused(chat({ model => 'echo-1', session_id => $sid, messages => \@hist,
               tools => [{ type => 'function', function => { name => 'clock' } }] }),
        422, 'invalid_field', 'tools', 'a name clashing with svc\'s clock', $before);
refused(chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tools => [{ type => 'function' }] }),
        422, 'missing_field', 'tools[0].function', 'a tool without function', $before);
refused(chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tools => [{ type => 'web_search' }] }),
        422, 'invalid_field', 'tools[0].type', 'a tool that is not a function', $before);
refused(chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tools => [$WEATHER],
               tool_choice => { type => 'function', function => { name => 'other' } } }),
        422, 'invalid_field', 'tool_choice', 'tool_choice naming no tool', $before);
refused(chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tool_choice => 'sometimes' }),
        422, 'invalid_field', 'tool_choice', 'tool_choice not a mode', $before);
is summary($sid)->{pending_tool_calls}[0]{id}, $tc->{id}, 'the call is still pending';

# the result: the whole history resent, only the trailing tool message counts
push @hist, { role => 'tool', tool_call_id => $tc->{id}, content => 'sunny, 21 C' };
$r = chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tools => [$WEATHER] });
is $r->{status}, 200, 'result: 200' or diag $r->{body};
is $r->{json}{choices}[0]{finish_reason}, 'stop', 'result: finish_reason stop';
is $r->{json}{choices}[0]{message}{content}, 'Echo: tool get_weather returned sunny, 21 C',
    'result: the model answers from it';
$sum = summary($sid);
ok !exists $sum->{pending_tool_calls}, 'summary: nothing pending any more';
is $sum->{message_count}, 4, 'four messages';
$n = natives($sid);
is $n->[2]{role}, 'user', 'the result is a user message';
is $n->[2]{content}[0]{toolResult}{toolUseId}, $tc->{id}, 'a Strands toolResult for the call';
is $n->[2]{content}[0]{toolResult}{status}, 'success', 'status success';
is $n->[2]{content}[0]{toolResult}{content}[0]{text}, 'sunny, 21 C', 'its text';

# the same result again: already answered
$before = snapshot();
refused(chat({ model => 'echo-1', session_id => $sid, messages => \@hist, tools => [$WEATHER] }),
        422, 'invalid_field', 'messages[2].tool_call_id', 'an answered call_id', $before);

# ---- chat completions, streamed; only the new tool message sent ----
$sid = 'ct-stream';
my $ev = $s->sse('/api/v1/chat/completions', body => { model => 'echo-1', session_id => $sid, stream => JSON::PP::true,
    messages => [{ role => 'user', content => '/tool get_weather {"city":"Oslo"}' }], tools => [$WEATHER] })->{events};
my @chunks = grep { ref $_ } @$ev;
my @tcs = map { @{ $_->{choices}[0]{delta}{tool_calls} // [] } } grep { @{ $_->{choices} } } @chunks;
is scalar @tcs, 1, 'stream: one delta.tool_calls entry';
is $tcs[0]{index}, 0, 'stream: index 0';
is $tcs[0]{function}{name}, 'get_weather', 'stream: the name';
is_deeply decode_json($tcs[0]{function}{arguments}), { city => 'Oslo' }, 'stream: the arguments';
my ($fin) = grep { @{ $_->{choices} } && $_->{choices}[0]{finish_reason} } @chunks;
is $fin->{choices}[0]{finish_reason}, 'tool_calls', 'stream: finish_reason tool_calls';
is $ev->[-1], '[DONE]', 'stream: [DONE]';
$ev = $s->sse('/api/v1/chat/completions', body => { model => 'echo-1', session_id => $sid, stream => JSON::PP::true,
    messages => [{ role => 'tool', tool_call_id => $tcs[0]{id}, content => 'snow' }] })->{events};
my $text = join '', map { $_->{choices}[0]{delta}{content} // '' } grep { ref $_ && @{ $_->{choices} } } @$ev;
is $text, 'Echo: tool get_weather returned snow', 'stream: the answer from the result (tools not resent)';

# ---- new input while a call is pending: error results first ----
$sid = 'ct-interrupt';
chat({ model => 'echo-1', session_id => $sid, messages => [{ role => 'user', content => '/tool get_weather {}' }],
       tools => [$WEATHER] });
$r = chat({ model => 'echo-1', session_id => $sid, messages => [{ role => 'user', content => 'never mind' }] });
like $r->{json}{choices}[0]{message}{content}, qr/^Echo: never mind \(I was given 3 earlier messages/,
    'new input goes on';
$n = natives($sid);
is $n->[2]{content}[0]{toolResult}{status}, 'error', 'the pending call got an error result';
is $n->[3]{content}[0]{text}, 'never mind', 'then the input';

# tool_choice none: the echo model calls nothing
$r = chat({ model => 'echo-1', session_id => 'ct-none', messages => [{ role => 'user', content => '/tool get_weather {}' }],
            tools => [$WEATHER], tool_choice => 'none' });
is $r->{json}{choices}[0]{finish_reason}, 'stop', 'tool_choice none: no call';

# svc's own tools still run themselves beside client tools
$r = chat({ model => 'echo-1', session_id => 'ct-own', messages => [{ role => 'user', content => '/tool clock {}' }],
            tools => [$WEATHER] });
like $r->{json}{choices}[0]{message}{content}, qr/^Tool clock returned: \d{4}-/, 'svc\'s clock beside client tools';
ok !$r->{json}{choices}[0]{message}{tool_calls}, 'no tool_calls for it';

# a new session without history: results answer nothing
$before = snapshot();
refused(chat({ model => 'echo-1', session_id => 'ct-fresh', messages => [{ role => 'tool', tool_call_id => 'call_1', content => 'x' }] }),
        422, 'invalid_field', 'messages[0].tool_call_id', 'results for a new session', $before);
# a new session with the history resent (stateless clients): imported, then answered
$r = chat({ model => 'echo-1', session_id => 'ct-import', messages => [
    { role => 'user', content => 'weather?' },
    { role => 'assistant', content => undef, tool_calls => [{ id => 'call_x1', type => 'function',
        function => { name => 'get_weather', arguments => '{}' } }] },
    { role => 'tool', tool_call_id => 'call_x1', content => 'fog' } ], tools => [$WEATHER] });
is $r->{json}{choices}[0]{message}{content}, 'Echo: tool get_weather returned fog', 'imported history answered';

# an Idempotency-Key retry of a request that ended on a call answers the same call
my %key = ('Idempotency-Key' => 'ct-key-1');
my $k1 = $s->req(POST => '/api/v1/chat/completions', headers => \%key, body => { model => 'echo-1',
    session_id => 'ct-idem', tools => [$WEATHER], messages => [{ role => 'user', content => '/tool get_weather {}' }] });
my $k2 = $s->req(POST => '/api/v1/chat/completions', headers => \%key, body => { model => 'echo-1',
    session_id => 'ct-idem', tools => [$WEATHER], messages => [{ role => 'user', content => '/tool get_weather {}' }] });
is $k2->{headers}{'idempotent-replayed'}, 'true', 'idempotent retry: replayed';
is $k2->{json}{choices}[0]{message}{tool_calls}[0]{id}, $k1->{json}{choices}[0]{message}{tool_calls}[0]{id},
    'idempotent retry: the same call';
is $k2->{json}{choices}[0]{finish_reason}, 'tool_calls', 'idempotent retry: finish_reason tool_calls';
is summary('ct-idem')->{message_count}, 2, 'idempotent retry: no second turn';

# ---- Responses API ----
$sid = 'ct-resp';
$r = resp({ model => 'echo-1', conversation => $sid, input => '/tool get_weather {"city":"Rome"}', tools => [$RWEATHER] });
is $r->{status}, 200, 'responses: 200' or diag $r->{body};
my @out = @{ $r->{json}{output} };
is scalar @out, 1, 'responses: one output item';
is $out[0]{type}, 'function_call', 'responses: a function_call item';
# streamed again with the request's Idempotency-Key: the stored items as events, no message
my $rk = $s->req(POST => '/api/v1/responses', headers => { 'Idempotency-Key' => 'ct-rkey' }, body => { model => 'echo-1',
    input => '/tool get_weather {"city":"Oslo"}', tools => [$RWEATHER] });
my $rks = $s->sse('/api/v1/responses', headers => { 'Idempotency-Key' => 'ct-rkey' }, body => { model => 'echo-1',
    input => '/tool get_weather {"city":"Oslo"}', tools => [$RWEATHER], stream => JSON::PP::true })->{events};
is_deeply [map { $_->{type} } grep { ref } @$rks],
    [qw(response.created response.in_progress response.output_item.added response.function_call_arguments.delta
        response.function_call_arguments.done response.output_item.done response.completed)],
    'responses: a stored call replayed as a stream has the items the plain answer had';
my ($rkc) = grep { ref && $_->{type} eq 'response.completed' } @$rks;
is_deeply $rkc->{response}, $rk->{json}, 'responses: and completes with the stored response';
is $out[0]{status}, 'completed', 'responses: status completed';
is $out[0]{name}, 'get_weather', 'responses: name';
is_deeply decode_json($out[0]{arguments}), { city => 'Rome' }, 'responses: arguments';
is $r->{json}{tools}[0]{name}, 'get_weather', 'responses: the tools echoed';
my $call_id = $out[0]{call_id};
is summary($sid)->{pending_tool_calls}[0]{id}, $call_id, 'responses: pending in the summary';
$before = snapshot();
refused(resp({ model => 'echo-1', previous_response_id => $r->{json}{id},
               input => [{ type => 'function_call_output', call_id => 'call_zzz', output => 'x' }] }),
        422, 'invalid_field', 'input[0].call_id', 'responses: unknown call_id', $before);
refused(resp({ model => 'echo-1', previous_response_id => $r->{json}{id},
               input => [{ type => 'function_call_output', output => 'x' }] }),
        422, 'missing_field', 'input[0].call_id', 'responses: an item without call_id', $before);
refused(resp({ model => 'echo-1', conversation => $sid, input => [{ type => 'computer_call' }] }),
        422, 'invalid_field', 'input[0].type', 'responses: an unknown item', $before);
refused(resp({ model => 'echo-1', conversation => $sid, input => 'x', tools => [{ type => 'function', name => 'clock' }] }),
        422, 'invalid_field', 'tools', 'responses: a clashing name', $before);
my $r2 = resp({ model => 'echo-1', previous_response_id => $r->{json}{id},
                input => [{ type => 'function_call_output', call_id => $call_id, output => 'warm' }] });
is $r2->{status}, 200, 'responses: result 200' or diag $r2->{body};
is $r2->{json}{output}[0]{content}[0]{text}, 'Echo: tool get_weather returned warm', 'responses: the answer';
ok !exists summary($sid)->{pending_tool_calls}, 'responses: nothing pending';

# streamed: the call as output item events
$ev = $s->sse('/api/v1/responses', body => { model => 'echo-1', conversation => 'ct-rstream', stream => JSON::PP::true,
    input => '/tool get_weather {"city":"Lima"}', tools => [$RWEATHER] })->{events};
my @types = map { $_->{type} } grep { ref $_ } @$ev;
my ($added) = grep { ref $_ && $_->{type} eq 'response.output_item.added' && $_->{item}{type} eq 'function_call' } @$ev;
ok $added, 'responses stream: output_item.added for the call';
ok((grep { $_ eq 'response.function_call_arguments.done' } @types), 'responses stream: arguments done');
my ($done) = grep { ref $_ && $_->{type} eq 'response.output_item.done' && $_->{item}{type} eq 'function_call' } @$ev;
is_deeply decode_json($done->{item}{arguments}), { city => 'Lima' }, 'responses stream: the arguments';
is $types[-1], 'response.completed', 'responses stream: completed last';
my ($comp) = grep { ref $_ && $_->{type} eq 'response.completed' } @$ev;
is $comp->{response}{output}[0]{call_id}, $done->{item}{call_id}, 'responses stream: the call in the final output';
# SPEC 15: the same items as without streaming: no empty message item before the call
ok !(grep { ref $_ && ($_->{item}{type} // '') eq 'message' } @$ev), 'responses stream: no message item before the call';
is scalar @{ $comp->{response}{output} }, 1, 'responses stream: the call is the only output item';
is_deeply $s->req(GET => "/api/v1/responses/$comp->{response}{id}")->{json}, $comp->{response},
    'responses stream: the stored response is what response.completed carried';

# ---- the openai provider: tools to the model server, its calls back ----
my $fake = FakeOpenAI->start;
my $o = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: " . $fake->base_url . "\n  api_key: sk-test\n");
$r = $o->req(POST => '/api/v1/chat/completions', body => { session_id => 'ct-oa', tools => [$WEATHER],
    tool_choice => { type => 'function', function => { name => 'get_weather' } },
    messages => [{ role => 'user', content => 'call tool get_weather {"city":"Bern"}' }] });
is $r->{status}, 200, 'openai: 200' or diag $r->{body};
$tc = $r->{json}{choices}[0]{message}{tool_calls}[0];
is $tc->{function}{name}, 'get_weather', 'openai: the model server\'s call reaches the client';
is_deeply decode_json($tc->{function}{arguments}), { city => 'Bern' }, 'openai: its arguments';
my $req = $fake->request_for('call tool get_weather {"city":"Bern"}');
ok((grep { $_->{function}{name} eq 'get_weather' } @{ $req->{tools} || [] }), 'openai: the client tool offered');
ok((grep { $_->{function}{name} eq 'clock' } @{ $req->{tools} || [] }), 'openai: beside svc\'s own');
is_deeply $req->{tool_choice}, { type => 'function', function => { name => 'get_weather' } }, 'openai: tool_choice passed';
$r = $o->req(POST => '/api/v1/chat/completions', body => { session_id => 'ct-oa', tools => [$WEATHER],
    messages => [{ role => 'tool', tool_call_id => $tc->{id}, content => 'clear' }] });
is $r->{json}{choices}[0]{message}{content}, 'Tool get_weather said: clear', 'openai: the model answers from the result';
$o->stop;
$fake->stop;

$s->stop;
done_testing;
