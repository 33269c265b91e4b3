#!/usr/bin/perl
# The `openai` model provider (SPEC 1 model:, 4.1, 9) through `svc chat`, against
# t/lib/FakeOpenAI.pm: what is sent (model, system prompt, restored history, tools, bearer
# key), streaming answers, a tool round trip with the built-in clock, retries on 5xx/429
# (Retry-After), no retry on 401, timeouts, key redaction, and the session's error state.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use IO::Socket::INET;
use SvcCliTest;
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
delete $ENV{OPENAI_API_KEY};

my $KEY = 'sk-test-SECRET';
my $fake = FakeOpenAI->start;

sub home_for {
    my ($base_url, %o) = @_;
    my $y = "model:\n  provider: openai\n  name: fake-1\n  base_url: $base_url\n"
      . "  api_key: $KEY\n  timeout_s: " . ($o{timeout_s} // 3) . "\n"
      . "  max_retries: " . ($o{max_retries} // 1) . "\n";
    $y .= $o{model_extra} if $o{model_extra};
    return new_home(yaml_extra => $y);
}

my @all_output; # every stdout/stderr, checked for the key at the end
sub chat {
    my ($h, $sid, $text) = @_;
    my $t0 = time;
    my $r = svc($h, 'chat', $sid, $text);
    $r->{secs} = time - $t0;
    push @all_output, $r->{out}, $r->{err};
    return $r;
}

sub messages_of { $_[0]{body}{messages} }
sub sidecar { json_file(sidecar_path(@_)) }
sub stored_messages {
    my ($h, $sid) = @_;
    return [ map { json_file(msg_dir($h, $sid) . "/message_$_.json") } msg_ids($h, $sid) ];
}

my $h = home_for($fake->base_url);

# ---- a two-turn conversation ----
{
    $fake->clear;
    my $r = chat($h, 'conv', 'hello there');
    is($r->{rc}, 0, 'first turn exits 0') or diag($r->{err});
    is($r->{out}, "You said: hello there (2 messages)\n", 'streamed answer printed');
    is($r->{err}, '', 'nothing on stderr');
    $r = chat($h, 'conv', 'and again');
    is($r->{rc}, 0, 'second turn exits 0') or diag($r->{err});
    is($r->{out}, "You said: and again (4 messages)\n", 'second answer saw the history');

    my $reqs = $fake->requests;
    is(scalar @$reqs, 2, 'two requests');
    my $q = $reqs->[0];
    is($q->{method}, 'POST', 'POST');
    is($q->{path}, '/v1/chat/completions', 'path is base_url + /chat/completions');
    is($q->{headers}{authorization}, "Bearer $KEY", 'API key sent as a bearer token');
    like($q->{headers}{'content-type'} // '', qr{^application/json}, 'JSON body');
    is($q->{body}{model}, 'fake-1', 'model name');
    ok($q->{body}{stream}, 'stream: true');
    is_deeply($q->{body}{stream_options}, { include_usage => JSON::PP::true }, 'include_usage');
    ok(!exists $q->{body}{temperature}, 'no temperature unless set');
    ok(!exists $q->{body}{max_tokens}, 'no max_tokens unless set');
    is_deeply(messages_of($q), [
        { role => 'system', content => 'You are a helpful assistant.' },
        { role => 'user', content => 'hello there' },
    ], 'first request: system prompt + user message');
    my $tools = $q->{body}{tools};
    is(ref $tools, 'ARRAY', 'tools sent');
    my ($clock) = grep { $_->{function}{name} eq 'clock' } @{ $tools // [] };
    ok($clock, 'clock tool offered');
    is($clock->{type}, 'function', 'tool type function');
    is($clock->{function}{description}, 'Current UTC time', 'tool description');
    is($clock->{function}{parameters}{type}, 'object', 'tool parameters schema');
    is_deeply(messages_of($reqs->[1]), [
        { role => 'system', content => 'You are a helpful assistant.' },
        { role => 'user', content => 'hello there' },
        { role => 'assistant', content => 'You said: hello there (2 messages)' },
        { role => 'user', content => 'and again' },
    ], 'second request carries the restored history');

    my $msgs = stored_messages($h, 'conv');
    is(scalar @$msgs, 4, 'four messages stored');
    is_deeply($msgs->[1]{message}{metadata}{usage},
        { inputTokens => 11, outputTokens => 7, totalTokens => 18 }, 'usage from the usage chunk');
    my $sc = sidecar($h, 'conv');
    is($sc->{status}, 'idle', 'session idle');
    is($sc->{model}, 'fake-1', 'sidecar model');
}

# ---- a tool call round trip ----
{
    $fake->clear;
    my $r = chat($h, 'tools', 'call tool clock');
    is($r->{rc}, 0, 'tool turn exits 0') or diag($r->{err});
    like($r->{out}, qr/^Tool clock said: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/m,
        'answer built from the tool result');
    my $reqs = $fake->requests;
    is(scalar @$reqs, 2, 'two model calls');
    my @m = @{ messages_of($reqs->[1]) };
    is(scalar @m, 4, 'second call: system, user, assistant tool_calls, tool');
    my $tc = $m[2]{tool_calls} // [];
    is($m[2]{role}, 'assistant', 'assistant message');
    is(scalar @$tc, 1, 'one tool call sent back');
    is($tc->[0]{function}{name}, 'clock', 'tool call name');
    is($tc->[0]{function}{arguments}, '{}', 'arguments as a JSON string');
    like($tc->[0]{id} // '', qr/^call_\d+$/, 'tool call id from the server');
    is($m[3]{role}, 'tool', 'tool message');
    is($m[3]{tool_call_id}, $tc->[0]{id}, 'tool_call_id matches');
    like($m[3]{content}, qr/^\d{4}-\d\d-\d\dT/, 'tool message carries the clock output');

    my $msgs = stored_messages($h, 'tools');
    is(scalar @$msgs, 4, 'four messages stored');
    my $tu = $msgs->[1]{message}{content}[0]{toolUse};
    ok($tu, 'assistant message has a toolUse block');
    is($tu->{name}, 'clock', 'toolUse name');
    is($tu->{toolUseId}, $tc->[0]{id}, 'toolUseId is the server id');
    is_deeply($tu->{input}, {}, 'toolUse input object');
    my $tr = $msgs->[2]{message}{content}[0]{toolResult};
    ok($tr, 'next message has a toolResult block');
    is($tr->{toolUseId}, $tu->{toolUseId}, 'toolResult answers the toolUse');
    is($tr->{status}, 'success', 'toolResult status');
    like($msgs->[3]{message}{content}[0]{text}, qr/^Tool clock said: /, 'final assistant text');
}

# ---- a tool call with arguments streamed in pieces ----
{
    $fake->clear;
    my $r = chat($h, 'toolargs', 'call tool clock {"zone": "UTC", "n": [1, 2]}');
    is($r->{rc}, 0, 'tool call with arguments exits 0') or diag($r->{err});
    my $msgs = stored_messages($h, 'toolargs');
    is_deeply($msgs->[1]{message}{content}[0]{toolUse}{input}, { zone => 'UTC', n => [ 1, 2 ] },
        'arguments joined from pieces and parsed');
}

# ---- 500: retried, then upstream_error ----
{
    $fake->clear;
    my $r = chat($h, 'err500', 'fail 500');
    is($r->{rc}, 1, '500 exits 1');
    like($r->{err}, qr/upstream_error/, 'upstream_error on stderr');
    like($r->{err}, qr/HTTP 500.*error while processing/, "server's message passed on");
    is(scalar @{ $fake->requests }, 2, 'retried once (max_retries: 1)');
    cmp_ok($r->{secs}, '>=', 0.45, 'with a backoff of about 0.5 s');
    my $sc = sidecar($h, 'err500');
    is($sc->{status}, 'error', 'session status error');
    is($sc->{last_error}{code}, 'upstream_error', 'last_error.code upstream_error');
    is($sc->{current_run}, undef, 'no current run');
}

# ---- 500 once: the retry succeeds ----
{
    $fake->clear;
    my $r = chat($h, 'err500once', 'fail 503 once');
    is($r->{rc}, 0, 'a passing 503 is retried and the run succeeds') or diag($r->{err});
    like($r->{out}, qr/^You said: fail 503 once/, 'answer after the retry');
    is(scalar @{ $fake->requests }, 2, 'two requests');
    # the retry is an event of the run, in svc_turns.jsonl
    my $tp = native_dir($h, 'err500once') . '/svc_turns.jsonl';
    open my $tf, '<', $tp or die "$tp: $!";
    my @turns = map { JSON::PP->new->decode($_) } grep { /\S/ } <$tf>;
    close $tf;
    my @retries = grep { $_->{type} eq 'retry' } @{ $turns[-1]{events} };
    is(scalar @retries, 1, 'one retry event recorded');
    is($retries[0]{attempt}, 1, 'retry event: attempt 1');
    is($retries[0]{max_attempts}, 2, 'retry event: of max_retries + 1 attempts');
    like($retries[0]{text}, qr/503|upstream|server/i, 'retry event says why');
}

# ---- 429 with Retry-After ----
{
    $fake->clear;
    my $r = chat($h, 'rate', 'fail 429 once');
    is($r->{rc}, 0, '429 once: retried and answered') or diag($r->{err});
    is(scalar @{ $fake->requests }, 2, 'two requests');
    cmp_ok($r->{secs}, '>=', 0.95, 'waited for Retry-After: 1');

    $fake->clear;
    $r = chat($h, 'rate2', 'fail 429');
    is($r->{rc}, 1, 'persistent 429 exits 1');
    like($r->{err}, qr/upstream_error.*429.*Rate limit/, 'upstream_error with the message');
    is(scalar @{ $fake->requests }, 2, 'tried 1 + max_retries times');
}

# ---- 401: not retried, key redacted ----
{
    $fake->clear;
    my $r = chat($h, 'auth', 'fail 401');
    is($r->{rc}, 1, '401 exits 1');
    like($r->{err}, qr/upstream_error/, 'upstream_error');
    like($r->{err}, qr/Incorrect API key provided: \*\*\*/, 'echoed key redacted');
    unlike($r->{err}, qr/SECRET/, 'key not on stderr');
    is(scalar @{ $fake->requests }, 1, '401 not retried');
    my $sidecar_text = slurp(sidecar_path($h, 'auth'));
    unlike($sidecar_text, qr/SECRET/, 'key not in svc_session.json');
    unlike(slurp(native_dir($h, 'auth') . '/svc_turns.jsonl') // '', qr/SECRET/,
        'key not in svc_turns.jsonl');
}

# ---- a mid-stream error after a delta: not retried ----
{
    $fake->clear;
    my $r = chat($h, 'midstream', 'garbage in');
    is($r->{rc}, 1, 'mid-stream error exits 1');
    like($r->{err}, qr/upstream_error.*overloaded mid-stream/, 'the error event message');
    is(scalar @{ $fake->requests }, 1, 'no retry once a delta was delivered');
}

# ---- timeout, then the session is usable again ----
{
    $fake->clear;
    my $r = chat($h, 'slowpoke', 'slow 6');
    is($r->{rc}, 1, 'slow answer exits 1');
    like($r->{err}, qr/upstream_timeout/, 'upstream_timeout on stderr');
    cmp_ok($r->{secs}, '<', 5.5, 'gave up after about timeout_s (3 s)');
    cmp_ok($r->{secs}, '>=', 2.5, 'not before timeout_s');
    is(scalar @{ $fake->requests }, 1, 'a timeout is not retried');
    my $sc = sidecar($h, 'slowpoke');
    is($sc->{status}, 'error', 'session status error');
    is($sc->{last_error}{code}, 'upstream_timeout', 'last_error.code upstream_timeout');
    like($sc->{last_error}{message}, qr/3 s/, 'message names the timeout');

    $fake->clear;
    $r = chat($h, 'slowpoke', 'slow 0.5 then fine');
    is($r->{rc}, 0, 'next run on the session works') or diag($r->{err});
    like($r->{out}, qr/^You said: slow 0\.5 then fine/, 'answer after a short wait');
    $sc = sidecar($h, 'slowpoke');
    is($sc->{status}, 'idle', 'session idle again');
    is($sc->{last_error}, undef, 'last_error cleared');
    my @m = @{ messages_of($fake->requests->[0]) };
    is($m[-1]{content}, 'slow 0.5 then fine', 'latest input last');
    is($m[1]{content}, 'slow 6', 'the failed input is part of the history');
}

# ---- plain JSON answers and missing usage ----
{
    $fake->clear;
    my $r = chat($h, 'plain', 'nostream please');
    is($r->{rc}, 0, 'non-streaming JSON answer accepted') or diag($r->{err});
    is($r->{out}, "You said: nostream please (2 messages)\n", 'its content');
    $r = chat($h, 'plain', 'call tool clock');
    is($r->{rc}, 0, 'streamed tool call on the same session') or diag($r->{err});

    $r = chat($h, 'nousage', 'nousage here');
    is($r->{rc}, 0, 'answer without a usage chunk') or diag($r->{err});
    my $msgs = stored_messages($h, 'nousage');
    my $u = $msgs->[1]{message}{metadata}{usage};
    my $answer = 'You said: nousage here (2 messages)';
    is($u->{outputTokens}, int((length($answer) + 3) / 4), 'completion tokens estimated at 4 chars/token');
    my $prompt_chars = length('You are a helpful assistant.') + length('nousage here');
    is($u->{inputTokens}, int(($prompt_chars + 3) / 4), 'prompt tokens estimated at 4 chars/token');
}

# ---- temperature, max_tokens, custom system prompt ----
{
    my $h2 = home_for($fake->base_url,
        model_extra => "  temperature: 0.5\n  max_tokens: 64\n  system_prompt: Be terse.\n");
    $fake->clear;
    my $r = chat($h2, 'opts', 'hi');
    is($r->{rc}, 0, 'run with options') or diag($r->{err});
    my $b = $fake->requests->[0]{body};
    is($b->{temperature}, 0.5, 'temperature sent when set');
    is($b->{max_tokens}, 64, 'max_tokens sent when set');
    is_deeply($b->{messages}[0], { role => 'system', content => 'Be terse.' }, 'system prompt');
}

# ---- no API key: no Authorization header ----
{
    my $y = "model:\n  provider: openai\n  name: fake-1\n  base_url: " . $fake->base_url . "/\n"
      . "  api_key_env: SVC_TEST_NO_SUCH_KEY\n  max_retries: 0\n";
    my $h3 = new_home(yaml_extra => $y);
    delete $ENV{SVC_TEST_NO_SUCH_KEY};
    $fake->clear;
    my $r = chat($h3, 'nokey', 'hi');
    is($r->{rc}, 0, 'works without a key (base_url with a trailing slash)') or diag($r->{err});
    my $q = $fake->requests->[0];
    ok(!exists $q->{headers}{authorization}, 'no Authorization header without a key');
    is($q->{path}, '/v1/chat/completions', 'no double slash');

    $fake->clear;
    $r = svc($h3, { SVC_TEST_NO_SUCH_KEY => 'sk-from-env-SECRET' }, 'chat', 'envkey', 'fail 401');
    push @all_output, $r->{out}, $r->{err};
    is($fake->requests->[0]{headers}{authorization}, 'Bearer sk-from-env-SECRET', 'key from api_key_env');
    unlike($r->{err}, qr/sk-from-env/, 'env key redacted too');
}

# ---- connection refused: retried, then upstream_error ----
{
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1)
      or die "socket: $!";
    my $port = $s->sockport;
    close $s; # nothing listens there now
    my $h4 = home_for("http://127.0.0.1:$port/v1");
    my $r = chat($h4, 'refused', 'hello?');
    is($r->{rc}, 1, 'connection refused exits 1');
    like($r->{err}, qr/upstream_error: cannot reach the model server/, 'upstream_error');
    cmp_ok($r->{secs}, '>=', 0.45, 'retried after a backoff');
    is(sidecar($h4, 'refused')->{last_error}{code}, 'upstream_error', 'recorded in the sidecar');
}

unlike(join('', @all_output), qr/SECRET/, 'the API key never appeared on stdout or stderr');

$fake->stop;
done_testing();
