#!/usr/bin/perl
# Streaming chat (SPEC 4.1): SSE framing, chunk sequence, usage, [DONE], svc.v2 events,
# tool calls, pings, mid-stream errors, client disconnect cancelling the run.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Fcntl qw(:flock);
use SvcTest;

my $s = SvcTest->start(config => "server:\n  run_timeout_s: 2\n", workers => 2,
                       env => { SVC_PING_INTERVAL_S => 1 });
my $T = JSON::PP::true;

sub stream {
    my ($sid, $text, %o) = @_;
    return $s->sse($o{path} || '/api/chat', abort_after => $o{abort_after}, stop_if => $o{stop_if}, body => {
        stream => $T, session_id => $sid, messages => [{ role => 'user', content => $text }],
        %{ $o{extra} || {} } });
}

my $r = stream('st-1', 'hello stream world', extra => { stream_options => { include_usage => $T } });
is $r->{status}, 200, 'stream 200';
like $r->{headers}{'content-type'}, qr{^text/event-stream}, 'text/event-stream';
is $r->{headers}{'cache-control'}, 'no-cache', 'Cache-Control: no-cache';
is $r->{headers}{'x-session-id'}, 'st-1', 'X-Session-Id';
my @ev = @{ $r->{events} };
is $ev[-1], '[DONE]', 'ends with [DONE]';
my @chunks = grep { ref } @ev;
is $chunks[0]{object}, 'chat.completion.chunk', 'chunk objects';
is $chunks[0]{choices}[0]{delta}{role}, 'assistant', 'first delta carries the role';
like $chunks[0]{id}, qr/^chatcmpl-run-/, 'chunk id';
ok !(grep { $_->{id} ne $chunks[0]{id} } @chunks), 'one id for the whole stream';
my $usage = $chunks[-1];
is_deeply $usage->{choices}, [], 'usage chunk has choices []';
ok $usage->{usage}{total_tokens} > 0, 'usage chunk';
my $fin = $chunks[-2];
is $fin->{choices}[0]{finish_reason}, 'stop', 'last choice chunk has finish_reason';
my @content = map { $_->{choices}[0]{delta}{content} // '' } @chunks[1 .. $#chunks - 2];
ok @content > 2, 'several content deltas (word by word)';
like join('', @content), qr/^Echo: hello stream world/, 'deltas add up to the answer';
ok !(grep { defined $_->{choices}[0]{finish_reason} } @chunks[0 .. $#chunks - 2]),
    'finish_reason null before the end';

# stored like a non-streaming run
my $m = $s->req(GET => '/api/v1/chat/sessions/st-1/messages')->{json};
is $m->{total}, 2, 'stream stored user + assistant';
is $m->{messages}[1]{content}, join('', @content), 'stored answer equals the streamed one';

# without include_usage: no usage chunk
$r = stream('st-1', 'again');
@chunks = grep { ref } @{ $r->{events} };
ok !(grep { exists $_->{usage} } @chunks), 'no usage chunk unless asked';
like join('', map { $_->{choices}[0]{delta}{content} // '' } @chunks), qr/given 2 earlier/, 'context restored in stream';

# alias endpoint streams too
$r = stream('st-alias', 'alias', path => '/api/v1/chat/completions');
is $r->{events}[-1], '[DONE]', 'alias streams';

# svc.v2: every chunk carries svc_event
$r = stream('st-v2', 'events please', extra => { metadata => { event_format => 'svc.v2' } });
my @svc = map { $_->{svc_event}{type} } grep { ref && $_->{svc_event} } @{ $r->{events} };
ok((grep { $_ eq 'delta' } @svc), 'svc.v2: delta events');
ok((grep { $_ eq 'phase' } @svc), 'svc.v2: phase event');
is $r->{events}[-1], '[DONE]', 'svc.v2 ends with [DONE]';

# server-side tool calls are reported (svc_event), never delegated as delta.tool_calls
$r = stream('st-tool', '/tool clock {}');
my @tc = grep { ref && $_->{choices} && @{ $_->{choices} } && exists $_->{choices}[0]{delta}{tool_calls} } @{ $r->{events} };
is scalar @tc, 0, 'no delta.tool_calls chunk';
my @tev = map { $_->{svc_event} } grep { ref && $_->{svc_event} } @{ $r->{events} };
is_deeply [map { $_->{type} } @tev], ['tool_start', 'tool_result'], 'tool_start and tool_result as svc_event';
is $tev[0]{tool}, 'clock', 'tool name';
ok $tev[1]{ok}, 'tool result ok';
ok !(grep { ref && $_->{choices} && @{ $_->{choices} } && ($_->{choices}[0]{finish_reason} // '') eq 'tool_calls' } @{ $r->{events} }),
    'no finish_reason tool_calls';
my $text = join '', map { $_->{choices}[0]{delta}{content} // '' } grep { ref && $_->{choices} && @{ $_->{choices} } } @{ $r->{events} };
like $text, qr/\S/, 'the answer is plain text';
is $r->{events}[-1], '[DONE]', 'tool stream ends with [DONE]';

# pings while the model is silent (interval shortened to 1 s for the test)
$r = stream('st-ping', '/slow 1500 slow words', stop_if => sub { grep { $_ eq 'ping' } @{ $_[1] } });
ok((grep { $_ eq 'ping' } @{ $r->{comments} }), 'a ": ping" comment while silent');
is scalar(grep { ref } @{ $r->{events} }), 1, 'before any content (only the role chunk)';

# an error after streaming started: data: {"error":...}, then the end (run_timeout_s: 2)
$r = stream('st-timeout', '/slow 900 a b c d e f');
is $r->{status}, 200, 'timeout stream started with 200';
my $last = $r->{events}[-1];
is ref $last, 'HASH', 'last event is an object';
is $last->{error}{code}, 'run_timeout', 'mid-stream error event';
ok !(grep { !ref && $_ eq '[DONE]' } @{ $r->{events} }), 'no [DONE] after an error';
my $sc = $s->req(GET => '/api/v1/chat/sessions/st-timeout')->{json};
is $sc->{status}, 'cancelled', 'timed-out run: status cancelled';
is $sc->{last_error}{code}, 'run_timeout', 'last_error run_timeout';

# busy before the stream starts: a plain 409 JSON answer
$s->req(POST => '/api/chat', body => { session_id => 'st-busy', messages => [{ role => 'user', content => 'x' }] });
open my $lk, '>>', $s->root . '/session_st-busy/.svc.run.lock' or die;
flock($lk, LOCK_EX) or die;
my $b = $s->req(POST => '/api/chat', body => { stream => $T, session_id => 'st-busy',
                                               messages => [{ role => 'user', content => 'y' }] });
is $b->{status}, 409, 'busy stream: 409';
is $b->{json}{error}{code}, 'session_busy', 'session_busy';
is $b->{headers}{'retry-after'}, '1', 'Retry-After';
close $lk;

# the client goes away mid-stream: the run is cancelled
$r = stream('st-gone', '/slow 300 one two three four five six seven eight', abort_after => 3);
ok SvcTest::wait_for(15, sub {
    ($s->req(GET => '/api/v1/chat/sessions/st-gone')->{json}{status} // '') eq 'cancelled' }),
    'client disconnect cancelled the run';
$sc = $s->req(GET => '/api/v1/chat/sessions/st-gone')->{json};
is $sc->{last_error}{code}, 'cancelled', 'last_error cancelled';
is $s->req(POST => '/api/chat', body => { session_id => 'st-gone', messages => [{ role => 'user', content => 'ok?' }] })->{status},
    200, 'session usable after a cancelled run';

$s->stop;
like $s->log, qr{POST /api/chat 200 \d+ [\d.]+ms rid=\S+ sid=st-1}, 'stream request logged with its session';
done_testing;
