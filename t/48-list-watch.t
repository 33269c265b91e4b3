#!/usr/bin/perl
# The listing's recount (core/index.c): every page stats each row's
# message_<count>.json to see a file another program added. Whatever another program then
# does to a listed session's messages (a file added in place, written as a temp file and
# renamed in, the directory replaced, the session directory swapped for another), every
# worker's next page gives message_count as the files do, and the detail agrees.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Copy qw(copy);
use SvcTest;

my $s = SvcTest->start(workers => 2);
my $root = $s->root;
my $aid = 'svc-agent';
my @sids = map { "lw-$_" } 1 .. 4;

for my $sid (@sids) {
    my $r = $s->req(POST => '/api/chat',
                    body => { session_id => $sid, messages => [{ role => 'user', content => "hi $sid" }] });
    is $r->{status}, 200, "turn on $sid";
}

sub msgdir { "$root/session_$_[0]/agents/agent_$aid/messages" }
sub files { my $d = msgdir($_[0]); opendir my $h, $d or return 0; scalar grep { /^message_\d+\.json$/ } readdir $h }

# List until each of the 2 workers has answered at least $n more pages (from its second
# page on, a worker watches the listed sessions) and 6 pages at least. Returns the pages
# (sid -> message_count each), in order.
sub worker_pages {
    my %count;
    $count{$_}++ for ($s->log =~ /svc-fcgi\[(\d+)\]: GET \/api\/v1\/chat\/sessions\?limit=50 /g);
    return %count;
}

sub lists {
    my ($n) = @_;
    my %before = worker_pages();
    my @pages;
    for my $i (1 .. 300) {
        my $r = $s->req(GET => '/api/v1/chat/sessions?limit=50');
        die "list: HTTP $r->{status}" unless $r->{status} == 200;
        push @pages, { map { $_->{session_id} => $_->{message_count} } @{ $r->{json}{sessions} } };
        my %now = worker_pages();
        my @more = map { $now{$_} - ($before{$_} // 0) } keys %now;
        last if @pages >= 6 && (grep { $_ >= $n } @more) >= 2;
    }
    return @pages;
}

# Each page after the change must give the files' count for sid; so must the detail.
sub agrees {
    my ($sid, $what) = @_;
    my $want = files($sid);
    my @pages = lists(3);
    ok @pages >= 6, "$what: 6 pages or more";
    my @bad = grep { ($_->{$sid} // -1) != $want } @pages[-6 .. -1];
    is scalar(@bad), 0, "$what: the last pages give $want messages for $sid"
        or diag explain [map { $_->{$sid} } @pages[-6 .. -1]];
    my $d = $s->req(GET => "/api/v1/chat/sessions/$sid");
    is $d->{json}{message_count}, $want, "$what: the detail agrees";
}

lists(3);
is files($sids[0]), 2, 'two messages to begin with';

# another program adds a message file in place
copy(msgdir($sids[0]) . '/message_1.json', msgdir($sids[0]) . '/message_2.json') or die "copy: $!";
agrees($sids[0], 'a file added in place');

# ... and one written under a temporary name, renamed in
copy(msgdir($sids[0]) . '/message_1.json', msgdir($sids[0]) . '/.tmp-new') or die "copy: $!";
rename(msgdir($sids[0]) . '/.tmp-new', msgdir($sids[0]) . '/message_3.json') or die "rename: $!";
agrees($sids[0], 'a file renamed in');

# the messages directory replaced by another holding one more file
{
    my $d = msgdir($sids[1]);
    mkdir "$d.new" or die "mkdir: $!";
    copy("$d/message_$_.json", "$d.new/message_$_.json") or die "copy: $!" for 0, 1;
    copy("$d/message_1.json", "$d.new/message_2.json") or die "copy: $!";
    rename $d, "$d.old" or die "rename: $!";
    rename "$d.new", $d or die "rename: $!";
}
agrees($sids[1], 'the messages directory replaced');

# the session directory swapped for a copy with one more message (as an import might)
{
    my $sd = "$root/session_$sids[2]";
    system('cp', '-a', $sd, "$sd.new") == 0 or die 'cp';
    copy(msgdir($sids[2]) . '/message_1.json', "$sd.new/agents/agent_$aid/messages/message_2.json")
        or die "copy: $!";
    rename $sd, "$root/old-$sids[2]" or die "rename: $!";
    rename "$sd.new", $sd or die "rename: $!";
}
agrees($sids[2], 'the session directory swapped');

# nothing changed: the untouched session keeps its count on every page
agrees($sids[3], 'an untouched session');

done_testing;
