#!/usr/bin/perl
# Run from the repo: SVC_BUILD=$PWD/build perl bench/continue.pl [N] (docs/BENCH.md "One session per conversation").
# continue_stateless: the cost of a turn whose earlier messages are looked up, against a
# turn naming its session, at N sessions; and the first lookup after N sessions were made.
use strict; use warnings; use lib 't/lib'; use SvcTest; use Time::HiRes qw(time);
$| = 1;
my $N = shift // 1000;
my $s = SvcTest->start(workers => 2);
my $t0 = time;
for my $i (1 .. $N) {
    $s->req(POST => '/api/v1/chat/completions', body => { session_id => "b$i", messages => [{ role => 'user', content => "hello $i" }] });
}
printf "made %d sessions in %.1f s\n", $N, time - $t0;
sub u { { role => 'user', content => $_[0] } }
sub a { { role => 'assistant', content => $_[0] } }
my $first = $s->req(POST => '/api/v1/chat/completions', body => { messages => [u('start')] })->{json};
$t0 = time;
my $r = $s->req(POST => '/api/v1/chat/completions', body => { messages => [u('start'), a($first->{content}), u('q0')] })->{json};
printf "first lookup (index caught up over %d sessions): %.1f ms, same session: %s\n", $N, (time - $t0) * 1000, $r->{session_id} eq $first->{session_id} ? 'yes' : 'no';
my @h = (u('start'), a($first->{content}), u('q0'), a($r->{content}));
my (@look, @named);
for my $k (1 .. 20) {
    $t0 = time;
    my $x = $s->req(POST => '/api/v1/chat/completions', body => { messages => [@h, u("q$k")] })->{json};
    push @look, (time - $t0) * 1000;
    push @h, u("q$k"), a($x->{content});
    $t0 = time;
    $s->req(POST => '/api/v1/chat/completions', body => { session_id => 'named', messages => [u("n$k")] });
    push @named, (time - $t0) * 1000;
}
@look = sort { $a <=> $b } @look; @named = sort { $a <=> $b } @named;
printf "resent history (up to %d messages), median %.1f ms; a turn naming its session, median %.1f ms\n", scalar @h, $look[10], $named[10];
$s->stop;
