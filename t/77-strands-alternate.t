#!/usr/bin/perl
# SPEC 17 item 5 with the real Strands SDK (t/lib/StrandsSDK.pm; skipped without
# STRANDS_SRC): Strands and svc take turns at random on two sessions of one root, one under
# sliding windows (Strands' window 10, svc's 8), one under Strands' summarizing manager
# (its context overflowing past 8 messages; svc then summarises it too). The turns use
# tools (one, two at once, big numbers), images, interrupts (resumed by Strands, declined
# or answered through svc) and plain text. After every turn `svc fsck` is clean, every
# tool call has exactly one result, message ids have no gap, and the conversation manager
# named in agent.json is still the session's own; the listing shows the true count. STRANDS_ALTERNATE_SEED replays a run
# (the seed is printed); STRANDS_ALTERNATE_STEPS sets its length (default 40).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use MIME::Base64 qw(encode_base64 decode_base64);
use File::Temp qw(tempdir);
use SvcTest;
use SvcCliTest ();
use FakeOpenAI;
use StrandsSDK;

StrandsSDK::require_sdk();
delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
my $J = $SvcTest::JSON;
my $seed = $ENV{STRANDS_ALTERNATE_SEED} // time;
my $steps = $ENV{STRANDS_ALTERNATE_STEPS} // 40;
srand $seed;
diag "seed $seed, $steps steps (STRANDS_ALTERNATE_SEED=$seed replays it)";

my $fake = FakeOpenAI->start;
my $s = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: k\nagent:\n  window_size: 8\n");
my $root = $s->root;
my $sdk = StrandsSDK->new($root);
my $cli = { home => $s->home };
my $img = tempdir(CLEANUP => 1) . '/p.png';
my $PNG64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mNgAAIAAAUAAen63NgAAAAASUVORK5CYII=';
SvcTest::write_file($img, decode_base64($PNG64));

my %session = (
    slide => { opts => ['--window', 10], manager => 'SlidingWindowConversationManager' },
    summ  => { opts => ['--summarizing', '--max', 8, '--preserve', 2], manager => 'SummarizingConversationManager' },
);
my %pending; # session -> the call an interrupt waits on
my $yes = 0;  # interrupts Strands itself resumed with "yes"

sub adir { "$root/session_$_[0]/agents/agent_svc-agent" }
sub ids { opendir my $d, adir($_[0]) . '/messages' or return (); sort { $a <=> $b } map { /^message_(\d+)\.json$/ ? $1 : () } readdir $d }
sub message { $J->decode(SvcTest::read_file(adir($_[0]) . "/messages/message_$_[1].json"))->{message} }
sub chat {
    my ($sid, @msgs) = @_;
    my $r = $s->req(POST => '/api/v1/chat/completions', body => { session_id => $sid, messages => \@msgs });
    return $r->{status} == 200 ? "svc $r->{status}" : "svc $r->{status} $r->{body}";
}

# the turns, by who takes them; each returns what it did
my %strands = (
    text    => sub { $sdk->turn($_[0], "strands says hi $_[1]", @{ $session{$_[0]}{opts} }); 'strands text' },
    tool    => sub { $sdk->turn($_[0], qq(tool lookup {"key": "k$_[1]"}), @{ $session{$_[0]}{opts} }); 'strands tool' },
    tools   => sub { $sdk->turn($_[0], 'tools 2', @{ $session{$_[0]}{opts} }); 'strands two tools' },
    numbers => sub { $sdk->turn($_[0], 'tool numbers {"n": 123456789012345678901234567890}', @{ $session{$_[0]}{opts} }); 'strands numbers' },
    image   => sub { $sdk->turn($_[0], "a picture $_[1]", '--image', $img, @{ $session{$_[0]}{opts} }); 'strands image' },
    interrupt => sub {
        my $r = $sdk->turn($_[0], qq(tool dangerous {"target": "t$_[1]"}), @{ $session{$_[0]}{opts} });
        $pending{ $_[0] } = 1 if $r->{stop_reason} eq 'interrupt';
        "strands interrupt ($r->{stop_reason})";
    },
);
my %svc = (
    text  => sub { chat($_[0], { role => 'user', content => "svc says hi $_[1]" }) },
    tool  => sub { chat($_[0], { role => 'user', content => 'call tool clock' }) },
    image => sub { chat($_[0], { role => 'user', content => [{ type => 'text', text => "svc picture $_[1]" },
        { type => 'image_url', image_url => { url => "data:image/png;base64,$PNG64" } }] }) },
);
my %closing = (
    strands_yes => sub { $yes++; $sdk->turn($_[0], '-', '--answer', 'yes', @{ $session{$_[0]}{opts} }); 'strands resumes: yes' },
    strands_no  => sub { $sdk->turn($_[0], '-', '--answer', 'no', @{ $session{$_[0]}{opts} }); 'strands resumes: no' },
    svc_decline => sub { chat($_[0], { role => 'user', content => "no thanks $_[1]" }) . ' (declined)' },
    svc_answer  => sub {
        my $i = $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json}{interrupts} // [];
        return 'svc: no interrupt shown' unless @$i;
        chat($_[0], { role => 'tool', tool_call_id => $i->[0]{tool_use_id}, content => "done by hand $_[1]" }) . ' (answered)';
    },
);

sub pick { my $h = shift; my @k = sort keys %$h; $k[int rand @k] }

# The invariants after a turn on $sid.
sub check {
    my ($sid, $what) = @_;
    my $l = $s->req(GET => '/api/v1/chat/sessions');  # the listing catches up with the files
    my ($row) = grep { $_->{session_id} eq $sid } @{ $l->{json}{sessions} // [] };
    my @have = ids($sid);
    is $row && $row->{message_count}, scalar @have, "$what: listed with its message count";
    my $r = SvcCliTest::svc($cli, 'fsck', '--json');
    is $r->{rc}, 0, "$what: fsck clean" or diag $r->{out}, $r->{err};
    my @ids = ids($sid);
    is_deeply \@ids, [0 .. $#ids], "$what: message ids without a gap";
    my (%uses, %results);
    for my $m (map { message($sid, $_) } @ids) {
        for my $b (@{ $m->{content} }) {
            $uses{ $b->{toolUse}{toolUseId} }++ if $b->{toolUse};
            $results{ $b->{toolResult}{toolUseId} }++ if $b->{toolResult};
        }
    }
    my @bad = grep { ($results{$_} // 0) != 1 } keys %uses;
    @bad = grep { !$pending{$sid} || $_ ne (sort keys %uses)[-1] } @bad if $pending{$sid};
    my @extra = grep { !$uses{$_} || $results{$_} > 1 } keys %results;
    ok !@bad && !@extra, "$what: one result per tool call"
        or diag "calls without one result: @bad; results of no call or repeated: @extra";
    my $agent = $J->decode(SvcTest::read_file(adir($sid) . '/agent.json'));
    is $agent->{conversation_manager_state}{__name__}, $session{$sid}{manager}, "$what: the session's manager";
    is !!$agent->{_internal_state}{interrupt_state}{activated}, !!$pending{$sid}, "$what: interrupt state";
}

for my $sid (sort keys %session) {
    $sdk->turn($sid, 'hello', @{ $session{$sid}{opts} });
    check($sid, "$sid opened by Strands");
}
for my $step (1 .. $steps) {
    my $sid = (sort keys %session)[int rand 2];
    my $what;
    if ($pending{$sid}) {
        my $how = pick(\%closing);
        delete $pending{$sid};
        $what = $closing{$how}->($sid, $step);
    } elsif (rand() < 0.5) {
        $what = $strands{ pick(\%strands) }->($sid, $step);
    } else {
        $what = $svc{ pick(\%svc) }->($sid, $step);
    }
    unlike $what, qr/^svc [^2]/, "step $step on $sid: $what";
    check($sid, "step $step on $sid ($what)");
}
# the declined and answered calls never ran: each "dangerous ran" line is an approval
my $ran = () = $sdk->side_effects =~ /dangerous ran/g;
is $ran, $yes, "the interrupted tool ran only when Strands itself approved it ($yes times)";
$s->stop;
$fake->stop;
done_testing;
