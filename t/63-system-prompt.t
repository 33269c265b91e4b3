#!/usr/bin/perl
# Per-request system prompts and generation settings (session.h): chat `system`/`developer`
# messages and the Responses API's `instructions` reach the model after the configured
# model.system_prompt, for that request only, and are never stored in the session;
# `temperature` and `max_tokens` (`max_completion_tokens`, Responses' `max_output_tokens`)
# override the configured ones for that request; bad values are refused before anything is
# written. Checked on the requests a fake OpenAI server (t/lib/FakeOpenAI.pm) recorded,
# through nginx and real workers.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $fake = FakeOpenAI->start;
my $s = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: sk-x\n", workers => 2);
my $BASE = 'You are a helpful assistant.';

sub request_for { $fake->request_for($_[0]) }
sub systems { [ map { $_->{content} } grep { $_->{role} eq 'system' } @{ $_[0]{messages} || [] } ] }

# chat: a system message, then a developer message, before the input
my $r = $s->req(POST => '/api/chat', body => { session_id => 'sp-1', messages => [
    { role => 'system', content => 'Answer in French.' },
    { role => 'developer', content => [{ type => 'text', text => 'Be brief.' }] },
    { role => 'user', content => 'bonjour' } ] });
is $r->{status}, 200, 'chat with a system message: 200' or diag explain $r;
is_deeply systems(request_for('bonjour')), ["$BASE\n\nAnswer in French.\n\nBe brief."],
    'one system message: the configured prompt, then the request\'s, in order';

# the next turn without one: the configured prompt only (the request's was not stored)
$r = $s->req(POST => '/api/chat', body => { session_id => 'sp-1', message => 'encore' });
is $r->{status}, 200, 'next turn: 200';
is_deeply systems(request_for('encore')), [$BASE], 'next turn: the configured prompt alone';
my $m = $s->req(GET => '/api/v1/chat/sessions/sp-1/messages')->{json};
is_deeply [map { $_->{role} } @{ $m->{messages} }], [qw(user assistant user assistant)],
    'no system message is stored in the session';

# Responses API: instructions, then a developer item
$r = $s->req(POST => '/api/v1/responses', body => { instructions => 'Use metric units.',
    input => [{ role => 'developer', content => 'Cite no sources.' }, { role => 'user', content => 'how far?' }] });
is $r->{status}, 200, 'responses with instructions: 200' or diag explain $r;
is $r->{json}{instructions}, 'Use metric units.', 'instructions echoed in the response object';
is_deeply systems(request_for('how far?')), ["$BASE\n\nUse metric units.\n\nCite no sources."],
    'responses: the configured prompt, instructions, then the developer item';

# a detached run carries it into its runner
$r = $s->req(POST => '/api/chat/runs', body => { session_id => 'sp-2', messages => [
    { role => 'system', content => 'Speak like a pirate.' }, { role => 'user', content => 'ahoy' } ] });
is $r->{status}, 202, 'detached run: 202';
is_deeply systems(request_for('ahoy')), ["$BASE\n\nSpeak like a pirate."], 'detached run: the request\'s prompt';

# an empty system message adds nothing
$r = $s->req(POST => '/api/chat', body => { session_id => 'sp-3', messages => [
    { role => 'system', content => '' }, { role => 'user', content => 'plain' } ] });
is $r->{status}, 200, 'empty system message: 200';
is_deeply systems(request_for('plain')), [$BASE], 'empty system message: the configured prompt alone';

# ---- generation settings ----
$r = $s->req(POST => '/api/chat', body => { session_id => 'gs-1', temperature => 0.25, max_tokens => 50,
    messages => [{ role => 'user', content => 'settings one' }] });
is $r->{status}, 200, 'chat with temperature and max_tokens: 200';
my $q = request_for('settings one');
is $q->{temperature}, 0.25, 'temperature forwarded';
is $q->{max_tokens}, 50, 'max_tokens forwarded';
$r = $s->req(POST => '/api/chat', body => { session_id => 'gs-1', max_completion_tokens => 7,
    messages => [{ role => 'user', content => 'settings two' }] });
is request_for('settings two')->{max_completion_tokens}, 7, 'max_completion_tokens forwarded as it was spelled (SPEC 15)';
$r = $s->req(POST => '/api/chat', body => { session_id => 'gs-1', message => 'settings three' });
$q = request_for('settings three');
ok !exists $q->{temperature} && !exists $q->{max_tokens}, 'the next request: the configured ones (none)';
$r = $s->req(POST => '/api/v1/responses', body => { input => 'settings four', temperature => 1, max_output_tokens => 9 });
is $r->{status}, 200, 'responses with settings: 200';
is $r->{json}{temperature}, 1, 'responses: temperature in the object';
is $r->{json}{max_output_tokens}, 9, 'responses: max_output_tokens in the object';
$q = request_for('settings four');
is $q->{temperature}, 1, 'responses: temperature forwarded';
is $q->{max_completion_tokens}, 9, 'responses: max_output_tokens forwarded as max_completion_tokens';

# bad values: 422 naming the field, nothing written, the model never asked
sub roots { opendir my $d, $s->root or return 0; scalar grep { /^session_/ } readdir $d }
my ($n_sessions, $n_requests) = (roots(), scalar @{ $fake->requests });
for my $case (
    [{ temperature => 'hot' }, 'temperature'],    [{ temperature => 2.5 }, 'temperature'],
    [{ temperature => -0.1 }, 'temperature'],     [{ max_tokens => 0 }, 'max_tokens'],
    [{ max_tokens => 1.5 }, 'max_tokens'],        [{ max_tokens => '9' }, 'max_tokens'],
    [{ max_completion_tokens => -1 }, 'max_completion_tokens'],
    [{ max_tokens => 4294967296 }, 'max_tokens'],
) {
    my ($extra, $param) = @$case;
    my $b = { session_id => 'gs-bad', messages => [{ role => 'user', content => 'never' }], %$extra };
    $r = $s->req(POST => '/api/chat', body => $b);
    my $what = join ',', %$extra;
    is $r->{status}, 422, "chat $what: 422";
    is $r->{json}{error}{code}, 'invalid_field', "chat $what: invalid_field";
    is $r->{json}{error}{param}, $param, "chat $what: param $param";
}
$r = $s->req(POST => '/api/v1/responses', body => { input => 'never', max_output_tokens => 0 });
is $r->{status}, 422, 'responses max_output_tokens 0: 422';
is $r->{json}{error}{param}, 'max_output_tokens', 'responses: param max_output_tokens';
$r = $s->req(POST => '/api/chat/runs', body => { session_id => 'gs-bad', temperature => 9,
    messages => [{ role => 'user', content => 'never' }] });
is $r->{status}, 422, 'detached run with temperature 9: 422';
is roots(), $n_sessions, 'no session was made by a refused request';
is scalar @{ $fake->requests }, $n_requests, 'the model was never asked';

$s->stop;
$fake->stop;
done_testing;
