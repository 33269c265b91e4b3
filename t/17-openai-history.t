#!/usr/bin/perl
# A stock OpenAI client resends the whole conversation every turn. With
# persist_openai_history on, the history of the first request is imported and later
# resends are ignored (the stored transcript wins); with it off, history is never stored.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

sub msgs_on_disk {
    my ($s, $sid) = @_;
    my $d = $s->root . "/session_$sid/agents/agent_svc-agent/messages";
    opendir(my $dh, $d) or return 0;
    my $n = grep { /^message_\d+\.json$/ } readdir $dh;
    return $n;
}

my @conv = (
    { role => 'system', content => 'be brief' },
    { role => 'user', content => 'what is 2+2?' },
    { role => 'assistant', content => '4' },
);

for my $persist (1, 0) {
    my $s = SvcTest->start(config => "sessions:\n  persist_openai_history: "
        . ($persist ? 'true' : 'false') . "\n");
    my $sid = "hist-$persist";
    my @sent = (@conv, { role => 'user', content => 'and 3+3?' });
    my $r = $s->req(POST => '/api/v1/chat/completions',
        body => { model => 'echo-1', session_id => $sid, messages => \@sent });
    is $r->{status}, 200, "persist=$persist: first turn 200";
    my $n1 = $persist ? 2 : 0;
    like $r->{json}{choices}[0]{message}{content}, qr/and 3\+3\?.*given $n1 earlier messages/,
        "persist=$persist: first turn sees $n1 earlier messages";
    is msgs_on_disk($s, $sid), $persist ? 4 : 2, "persist=$persist: messages stored";

    # the client resends everything plus its new question
    push @sent, { role => 'assistant', content => $r->{json}{choices}[0]{message}{content} },
        { role => 'user', content => 'and 4+4?' };
    $r = $s->req(POST => '/api/v1/chat/completions',
        body => { model => 'echo-1', session_id => $sid, messages => \@sent });
    is $r->{status}, 200, "persist=$persist: second turn 200";
    my $n2 = $n1 + 2;
    like $r->{json}{choices}[0]{message}{content}, qr/and 4\+4\?.*given $n2 earlier messages/,
        "persist=$persist: the stored transcript wins over the resent history";
    is msgs_on_disk($s, $sid), $n2 + 2, "persist=$persist: no duplicated history on disk";

    my $m = $s->req(GET => "/api/v1/chat/sessions/$sid/messages");
    my @texts = map { $_->{content} } @{ $m->{json}{messages} };
    if ($persist) {
        is $texts[0], 'what is 2+2?', 'imported history comes first';
        is $texts[1], '4', 'then the imported assistant answer';
    } else {
        is $texts[0], 'and 3+3?', 'without persistence the transcript starts at the first input';
    }
    $s->stop;
}

done_testing();
