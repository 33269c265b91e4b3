#!/usr/bin/perl
# Every request field honoured or refused (SPEC 15, issue 37): generation settings reach the
# `openai` model unchanged (t/lib/FakeOpenAI.pm logs what it gets), in chat completions'
# spelling from either API, and come back echoed in the Responses object; n > 1, unknown
# fields and what svc cannot honour are refused naming the field; the model server's 400 is
# the client's 400; usage details come back; the echo model honours response_format /
# text.format, stop, the token limit and logprobs offline; /responses/input_tokens counts.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;
use JSON::PP;

my $fake = FakeOpenAI->start;
my $oa = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
                        . $fake->base_url . "\n  api_key: sk-test\n");
my $s = SvcTest->start;
my $T = JSON::PP::true;
my $schema = { type => 'object', additionalProperties => JSON::PP::false, required => [qw(city temp sky)],
               properties => { city => { type => 'string' }, temp => { type => 'integer', minimum => 3 },
                               sky => { enum => [qw(clear cloudy)] } } };

sub sent { my $r = $fake->requests; $r->[-1]{body} }

# ---- chat completions: the settings reach the model as sent ----
my %settings = (top_p => 0.5, seed => 42, presence_penalty => 0.1, frequency_penalty => -0.2,
                logit_bias => { 50256 => -100 }, logprobs => $T, top_logprobs => 2, stop => ['END'],
                reasoning_effort => 'low', verbosity => 'low', parallel_tool_calls => JSON::PP::false,
                safety_identifier => 'sid-1', service_tier => 'flex', prompt_cache_key => 'k-1',
                user => 'u-1', max_completion_tokens => 50,
                response_format => { type => 'json_schema', json_schema => { name => 'w', strict => $T, schema => $schema } });
my $r = $oa->req(POST => '/api/v1/chat/completions',
                 body => { model => 'x', messages => [{ role => 'user', content => 'hi' }], %settings });
is $r->{status}, 200, 'chat with every setting: 200' or diag $r->{body};
my $b = sent();
for my $k (sort keys %settings) {
    is_deeply $b->{$k}, $settings{$k}, "chat: $k reached the model unchanged";
}
is $b->{max_completion_tokens}, 50, 'max_completion_tokens kept its spelling';
ok !exists $b->{max_tokens}, 'and no max_tokens beside it';
ok $b->{tools}, '(with svc\'s own tools, which parallel_tool_calls goes with)';
$r = $oa->req(POST => '/api/v1/responses', body => { input => 'hi', tools => [{ type => 'function',
    name => 'get_weather', strict => $T, parameters => { type => 'object', properties => {} } }] });
my ($gw) = grep { $_->{function}{name} eq 'get_weather' } @{ sent()->{tools} };
ok $gw->{function}{strict}, "a function tool's strict reached the model";
is $r->{json}{tools}[0]{strict}, $T, '... and is echoed in the Responses object';

# ---- the Responses API: its spellings mapped to chat's, echoed as OpenAI echoes them ----
$fake->script({ content => 'Fine.', usage => { prompt_tokens => 20, completion_tokens => 5, total_tokens => 25,
    prompt_tokens_details => { cached_tokens => 12 }, completion_tokens_details => { reasoning_tokens => 3 } } });
$r = $oa->req(POST => '/api/v1/responses', body => { model => 'x', input => 'hi', top_p => 0.3,
    max_output_tokens => 40, reasoning => { effort => 'high' }, service_tier => 'default',
    text => { verbosity => 'high', format => { type => 'json_schema', name => 'w', strict => $T, schema => $schema } },
    include => ['message.output_text.logprobs'], top_logprobs => 1, prompt_cache_key => 'pk',
    safety_identifier => 'si' });
is $r->{status}, 200, 'responses with settings: 200' or diag $r->{body};
$b = sent();
is $b->{top_p}, 0.3, 'responses: top_p passed on';
is $b->{max_completion_tokens}, 40, 'max_output_tokens sent as max_completion_tokens';
is $b->{reasoning_effort}, 'high', 'reasoning.effort sent as reasoning_effort';
is $b->{verbosity}, 'high', 'text.verbosity sent as verbosity';
is_deeply $b->{response_format}, { type => 'json_schema', json_schema => { name => 'w', strict => $T, schema => $schema } },
    'text.format sent as response_format';
ok $b->{logprobs}, 'include message.output_text.logprobs sent as logprobs';
is $b->{top_logprobs}, 1, 'top_logprobs passed on';
my $o = $r->{json};
is $o->{top_p}, 0.3, 'echo: top_p';
is_deeply $o->{reasoning}, { effort => 'high', summary => undef }, 'echo: reasoning';
is_deeply $o->{text}{format}, { type => 'json_schema', name => 'w', strict => $T, schema => $schema }, 'echo: the format asked for';
is $o->{text}{verbosity}, 'high', 'echo: verbosity';
is $o->{service_tier}, 'default', 'echo: service_tier';
is $o->{prompt_cache_key}, 'pk', 'echo: prompt_cache_key';
is $o->{max_output_tokens}, 40, 'echo: max_output_tokens';
is $o->{usage}{input_tokens_details}{cached_tokens}, 12, 'usage: cached tokens from the model server';
is $o->{usage}{output_tokens_details}{reasoning_tokens}, 3, 'usage: reasoning tokens from the model server';
$fake->script({ content => 'Fine.', usage => { prompt_tokens => 20, completion_tokens => 5, total_tokens => 25,
    prompt_tokens_details => { cached_tokens => 7 }, completion_tokens_details => { reasoning_tokens => 2 } } });
$r = $oa->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'hi' }] });
is $r->{json}{usage}{prompt_tokens_details}{cached_tokens}, 7, 'chat usage: cached tokens';
is $r->{json}{usage}{completion_tokens_details}{reasoning_tokens}, 2, 'chat usage: reasoning tokens';

# ---- the model server's refusal is the client's 400 ----
$fake->script({ status => 400, error => { message => "Unsupported value: 'top_p'", param => 'top_p' } });
$r = $oa->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'hi' }], top_p => 0.9 });
is $r->{status}, 400, "the model server's 400 is a 400, not a 502";
is $r->{json}{error}{code}, 'upstream_refused', 'code upstream_refused';
is $r->{json}{error}{param}, 'top_p', 'param: the field it refused';
like $r->{json}{error}{message}, qr/Unsupported value/, "with the server's message";

# ---- refused by svc, naming the field, nothing sent ----
$fake->clear;
for my $case ([{ n => 2 }, 'n'], [{ frobnicate => 1 }, 'frobnicate'], [{ audio => {} }, 'audio'],
              [{ modalities => ['text', 'audio'] }, 'modalities'], [{ modalities => [undef] }, 'modalities'],
              [{ top_p => 3 }, 'top_p'],
              [{ stop => [1] }, 'stop'], [{ response_format => { type => 'yaml' } }, 'response_format.type'],
              # nested fields svc did not know were dropped, a name that is no string became "response"
              [{ response_format => { type => 'json_schema', json_schema => { name => 'w', schema => {}, shema => {} } } },
               'response_format.json_schema.shema'],
              [{ response_format => { type => 'json_schema', json_schema => { name => {}, schema => {} } } },
               'response_format.json_schema.name'],
              [{ response_format => { type => 'json_object', json_shema => {} } }, 'response_format.json_shema'],
              [{ tools => [{ type => 'function', function => { name => 'f', paramters => {} } }] }, 'tools[0].function.paramters'],
              [{ tools => [{ type => 'function', function => { name => 'f' }, strict => JSON::PP::true }] }, 'tools[0].strict']) {
    my ($extra, $param) = @$case;
    $r = $oa->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'hi' }], %$extra });
    is $r->{status}, 422, "chat $param: 422";
    is $r->{json}{error}{param}, $param, "chat $param: named";
}
for my $case ([{ reasoning => { summary => 'auto' } }, 'reasoning.summary'], [{ max_tool_calls => 3 }, 'max_tool_calls'],
              [{ include => ['nonsense'] }, 'include[0]'], [{ seedling => 1 }, 'seedling'],
              [{ text => { format => { type => 'json_schema' } } }, 'text.format.schema'],
              [{ text => { format => { type => 'json_schema', name => 'x', schema => {}, strict => 'yes' } } }, 'text.format.strict'],
              [{ text => { format => { type => 'json_schema', name => 'x', schema => {}, json_schema => {} } } }, 'text.format.json_schema'],
              [{ text => { verbosty => 'low' } }, 'text.verbosty'], [{ reasoning => { efort => 'low' } }, 'reasoning.efort'],
              [{ tools => [{ type => 'function', name => 'f', paramters => {} }] }, 'tools[0].paramters']) {
    my ($extra, $param) = @$case;
    $r = $oa->req(POST => '/api/v1/responses', body => { input => 'hi', %$extra });
    is $r->{status}, 422, "responses $param: 422";
    is $r->{json}{error}{param}, $param, "responses $param: named";
}
is scalar @{ $fake->requests }, 0, 'nothing refused reached the model server';

# ---- the echo model honours the format, stop, the token limit and logprobs ----
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'Oslo' }],
    response_format => { type => 'json_schema', json_schema => { name => 'w', schema => $schema } } });
is_deeply decode_json($r->{json}{choices}[0]{message}{content}), { city => 'Oslo', temp => 3, sky => 'clear' },
    'echo json_schema: a value the schema accepts, the input in its first string';
$r = $s->req(POST => '/api/v1/responses', body => { input => 'Oslo',
    text => { format => { type => 'json_schema', name => 'x', schema => { type => 'object' } } } });
is "$r->{status} $r->{json}{output}[0]{content}[0]{text}", '200 {}',
    'echo json_schema of an object without properties: {} (the worker died on it)';
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'Oslo' }],
    response_format => { type => 'json_schema', json_schema => { name => 'x',
        schema => { type => 'object', properties => { a => { type => 'string' } }, required => [undef, 'a'] } } } });
is "$r->{status} " . ($r->{json}{choices}[0]{message}{content} // ''), '200 {"a":"Oslo"}',
    'echo json_schema with required [null, "a"]: the worker lives, "a" filled (it died on the null)';
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'Oslo' }],
    response_format => { type => 'json_schema', json_schema => { name => 'x',
        schema => { type => 'object', properties => { n => { type => 'integer', minimum => 1e308 } } } } } });
is "$r->{status} " . ($r->{json}{choices}[0]{message}{content} // ''), '200 {"n":1e+308}',
    'echo json_schema: an integer of minimum 1e308 is 1e308 (the cast to int64 was UB: the ASan build died)';
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'Oslo' }],
    response_format => { type => 'json_schema', json_schema => { name => 'x',
        schema => { type => 'object', properties => { map { ($_ => { '$ref' => '#' }) } 'a' .. 'e' } } } } });
is $r->{status}, 200, 'echo json_schema of 5 properties that $ref the root: answered (5^16 values: the worker spun until killed)';
is ref(eval { decode_json($r->{json}{choices}[0]{message}{content}) }), 'HASH', '... with an object';
$r = $s->req(POST => '/api/v1/responses', body => { input => 'Oslo', text => { format => { type => 'json_object' } } });
is ref decode_json($r->{json}{output}[0]{content}[0]{text}), 'HASH', 'echo json_object: an object';
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'one two STOP three' }],
    stop => 'STOP' });
is $r->{json}{choices}[0]{message}{content}, 'Echo: one two ', 'echo: stop ends the answer before it';
is $r->{json}{choices}[0]{finish_reason}, 'stop', 'finish_reason stop';
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'a long enough input' }],
    max_tokens => 2 });
is $r->{json}{choices}[0]{message}{content}, 'Echo: a ', 'echo: cut at 2 tokens of 4 characters';
is $r->{json}{choices}[0]{finish_reason}, 'length', 'finish_reason length';
$r = $s->req(POST => '/api/v1/responses', body => { input => 'a long enough input', max_output_tokens => 2 });
is $r->{json}{status}, 'incomplete', 'Responses: status incomplete';
is_deeply $r->{json}{incomplete_details}, { reason => 'max_output_tokens' }, 'incomplete_details';
my $ev = $s->sse('/api/v1/responses', body => { input => 'a long enough input', max_output_tokens => 2, stream => $T })->{events};
ok((grep { ref $_ && $_->{type} eq 'response.incomplete' } @$ev), 'streamed: response.incomplete');
$r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [{ role => 'user', content => 'hi there' }],
    logprobs => $T, top_logprobs => 1 });
my $lp = $r->{json}{choices}[0]{logprobs}{content};
is join('', map { $_->{token} } @$lp), $r->{json}{choices}[0]{message}{content}, 'echo logprobs: one a word';
is $lp->[0]{top_logprobs}[0]{logprob}, 0, 'with top_logprobs';

# ---- input_tokens, and paths that do not exist ----
$r = $s->req(POST => '/api/v1/responses/input_tokens', body => { model => 'echo-1', input => 'x' x 400 });
is $r->{status}, 200, 'input_tokens: 200' or diag $r->{body};
is $r->{json}{object}, 'response.input_tokens', 'its object';
cmp_ok $r->{json}{input_tokens}, '>=', 100, 'counts the input at 4 characters a token';
for my $p ('/api/v1/responses/compacted', '/api/v1/responses/nope/extra', '/api/v1/responses/nope') {
    $r = $s->req(POST => $p, body => { input => 'x' });
    is $r->{status}, 404, "POST $p: 404, not 405";
    like $r->{json}{error}{message} // '', qr{\Q$p\E}, 'naming the path';
}
$oa->stop;
$s->stop;
$fake->stop;
done_testing;
