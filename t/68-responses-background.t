#!/usr/bin/perl
# Background responses (SPEC 12.3): answered at once in_progress, the run is an asynchronous
# run (core/runs.c) polled by GET /api/v1/responses/{id}, cancelled by POST .../cancel;
# another user's response is 404 as an unknown one; bad combinations are 422 and change
# nothing. The official `openai` client (t/node/background.mjs) drives the same.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep);
use SvcTest;

my %TOK = (alice => 'tok-alice-Bg-0001', bob => 'tok-bob-Bg-0002');
my $s = SvcTest->start(workers => 2, SvcTest::users(\%TOK));

sub as { my $who = shift; $s->req_as($TOK{$who}, @_) }
sub poll {
    my ($id) = @_;
    my $o;
    for (1 .. 100) {
        $o = as(alice => GET => "/api/v1/responses/$id")->{json};
        last if $o->{status} ne 'in_progress';
        sleep 0.1;
    }
    return $o;
}

my $r = as(alice => POST => '/api/v1/responses', body => { model => 'echo-1', input => '/slow 100 hello there', background => JSON::PP::true });
is $r->{status}, 200, 'background: 200 at once';
is $r->{json}{status}, 'in_progress', '... in_progress';
is_deeply $r->{json}{output}, [], '... no output yet';
ok $r->{json}{background}, '... background: true';
my $id = $r->{json}{id};
is as(bob => GET => "/api/v1/responses/$id")->{status}, 404, "another user's: 404";
is as(bob => POST => "/api/v1/responses/$id/cancel")->{status}, 404, "another user's cancel: 404";
my $done = poll($id);
is $done->{status}, 'completed', 'polled to completed';
is $done->{output}[0]{content}[0]{text}, 'Echo: hello there (I was given 0 earlier messages.)', 'the answer';
ok $done->{usage}{total_tokens} > 0, 'usage';
my $sid = $done->{session_id};
my $b = as(alice => POST => '/api/v1/responses', body => { model => 'echo-1', input => 'next', previous_response_id => $id });
like $b->{json}{output}[0]{content}[0]{text}, qr/2 earlier messages/, 'previous_response_id continues a background response';
is $b->{json}{session_id}, $sid, '... in its session';

# cancel
my $slow = as(alice => POST => '/api/v1/responses', body => { model => 'echo-1', input => '/slow 3000 a b c d e', background => JSON::PP::true })->{json};
my $c = as(alice => POST => "/api/v1/responses/$slow->{id}/cancel");
is $c->{status}, 200, 'cancel: 200';
is $c->{json}{status}, 'cancelled', 'cancel: cancelled';
is poll($slow->{id})->{status}, 'cancelled', 'GET after cancel: cancelled';
is as(alice => POST => "/api/v1/responses/$slow->{id}/cancel")->{json}{status}, 'cancelled', 'cancel again: as it is';
my $fg = as(alice => POST => '/api/v1/responses', body => { model => 'echo-1', input => 'fg' })->{json};
is as(alice => POST => "/api/v1/responses/$fg->{id}/cancel")->{status}, 409, 'cancel of a foreground response: 409';
is as(alice => POST => '/api/v1/responses/resp_' . ('0' x 32) . '/cancel')->{status}, 404, 'cancel of an unknown: 404';

# bad combinations: 422, nothing on disk changes
for my $bad ([store => JSON::PP::false], [tools => [{ type => 'function', name => 'f', parameters => {} }]], [background => 'yes']) {
    my $before = $s->snapshot(qr/^\.svc_index/);
    my $x = as(alice => POST => '/api/v1/responses',
               body => { model => 'echo-1', input => 'x', background => JSON::PP::true, @$bad });
    ok $x->{status} == 422 || $x->{status} == 400, "background with $bad->[0]: 4xx" or diag explain $x->{json};
    is $s->snapshot(qr/^\.svc_index/), $before, "... nothing changed on disk";
}

# background with stream: the first stream, numbered so that it can be resumed
my $T = JSON::PP::true;
my $st = $s->sse('/api/v1/responses', headers => { authorization => "Bearer $TOK{alice}" },
              body => { model => 'echo-1', input => '/slow 50 one two three', background => $T, stream => $T });
is $st->{status}, 200, 'background stream: 200';
my @ev = grep { ref } @{ $st->{events} };
is_deeply [map { $_->{sequence_number} } @ev], [0 .. $#ev], 'sequence_number on every event, 0..n';
is $ev[0]{type}, 'response.created', 'first: response.created';
is $ev[-1]{type}, 'response.completed', 'last: response.completed';
is $ev[-1]{response}{status}, 'completed', '... completed';
my $text = join '', map { $_->{delta} } grep { $_->{type} eq 'response.output_text.delta' } @ev;
like $text, qr/^Echo: one two three/, 'the deltas make the answer';
my $rid = $ev[0]{response}{id};
my $again = $s->sse("/api/v1/responses/$rid?stream=true", method => 'GET', headers => { authorization => "Bearer $TOK{alice}" });
is_deeply [grep { ref } @{ $again->{events} }], \@ev, 'stream=true replays the same events';
my $from = int(@ev / 2);
my $rest = $s->sse("/api/v1/responses/$rid?stream=true&starting_after=$from", method => 'GET',
                   headers => { authorization => "Bearer $TOK{alice}" });
is_deeply [grep { ref } @{ $rest->{events} }], [@ev[$from + 1 .. $#ev]], 'starting_after=N: the events after N';
my $past = as(alice => GET => "/api/v1/responses/$rid?stream=true&starting_after=" . ($#ev + 1));
is $past->{status}, 400, 'starting_after past the end: 400';
is $past->{json}{error}{param}, 'starting_after', '... naming starting_after';
is as(bob => GET => "/api/v1/responses/$rid?stream=true")->{status}, 404, "another user's stream: 404";
is as(alice => GET => "/api/v1/responses/$fg->{id}?stream=true")->{status}, 400, 'a foreground response: 400';
# resume while it runs: follows it live to its end
my $live = as(alice => POST => '/api/v1/responses', body => { model => 'echo-1', input => '/slow 300 w x y z', background => $T })->{json};
my $fol = $s->sse("/api/v1/responses/$live->{id}?stream=true&starting_after=1", method => 'GET',
                  headers => { authorization => "Bearer $TOK{alice}" });
my @fe = grep { ref } @{ $fol->{events} };
is $fe[0]{sequence_number}, 2, 'live resume starts after N';
is $fe[-1]{type}, 'response.completed', '... and follows the run to its end';

# ---- the official openai client (node: scripts/install-deps) ----
my $end = SvcTest->node_checks('background.mjs', $s->url('/api/v1'), $TOK{alice});
ok $end, 'the client script ran to its end';

$s->stop;
done_testing;
