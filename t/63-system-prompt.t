#!/usr/bin/perl
# Per-request system prompts (session.h): chat `system`/`developer` messages and the
# Responses API's `instructions` reach the model after the configured model.system_prompt,
# for that request only, and are never stored in the session. Checked on the requests a
# fake OpenAI server (t/lib/FakeOpenAI.pm) recorded, through nginx and real workers.
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

$s->stop;
$fake->stop;
done_testing;
