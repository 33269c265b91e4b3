#!/usr/bin/perl
# sessions.cache (core/cache.h): two pools on one root, one with the caches on (`auto`, a
# local root) and one with them off, as /api/config shows. After each change another
# program makes behind the cached pool's back (a message rewritten in place with its size
# and mtime kept, a message file added, the sidecar renamed over), the cached pool, its
# caches warm, answers what the uncached one reads from the disk: the detail, the
# messages page, the list, and the window a turn gives the model.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep);
use SvcTest;
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $fake = FakeOpenAI->start;
my $model = "model:\n  provider: openai\n  name: fake-1\n  base_url: " . $fake->base_url
    . "\n  api_key: sk-x\n";
my $on = SvcTest->start(workers => 1,
                        config => "${model}sessions:\n  sync_memory: false\n  cache: auto\n");
my $root = $on->root;
my $off = SvcTest->start(workers => 1, config =>
    "${model}sessions:\n  sync_memory: false\n  cache: off\n  root: $root\n");
is $on->req(GET => '/api/config')->{json}{sessions}{cache}, 'auto', 'the cached pool: cache auto';
is $off->req(GET => '/api/config')->{json}{sessions}{cache}, 'off', 'the other: cache off';

my $sid = 'coff';
my $mdir = "$root/session_$sid/agents/agent_svc-agent/messages";
my $api = "/api/v1/chat/sessions";

sub turn {
    my ($s, $text) = @_;
    my $r = $s->req(POST => '/api/chat', body => { session_id => $sid, message => $text });
    return $r->{status} == 200 ? $fake->request_for($text) : undef;
}
sub given { my ($body) = @_; [ map { ref $_->{content} ? '' : $_->{content} } grep { $_->{role} ne 'system' } @{ $body->{messages} || [] } ] }
# Rewrite $file in place with $from replaced by $to, then put its times back to the
# nanosecond: true when its size and mtime are as they were (only ctime tells the change).
sub rewrite_keep_stat {
    my ($file, $from, $to) = @_;
    my $ref = $on->home . '/times.ref';
    system('cp', '-p', $file, $ref) == 0 or die "cp $file";
    my $was = `stat -c '%s %y' '$file'`;
    my $t = SvcTest::read_file($file);
    $t =~ s/\Q$from\E/$to/ or die "no '$from' in $file";
    open my $fh, '+<', $file or die "$file: $!";
    print $fh $t;
    close $fh;
    system('touch', '-r', $ref, $file) == 0 or die "touch $file";
    unlink $ref;
    return `stat -c '%s %y' '$file'` eq $was;
}
sub get { my ($s, $path) = @_; my $r = $s->req(GET => $path); $r->{status} == 200 ? $r->{json} : { status => $r->{status} } }

# What the cached pool answers, asked three times (its caches filled and then used), is
# what the uncached one answers.
sub agree {
    my ($what) = @_;
    for my $path ("$api/$sid", "$api/$sid/messages?limit=200", "$api/$sid/messages?limit=200&order=desc",
                  "$api?limit=50", "/api/chat/sessions/$sid/tokens") {
        my @cached = map { get($on, $path) } 1 .. 3;
        my $fresh = get($off, $path);
        is_deeply $cached[2], $fresh, "$what: $path agrees" or diag explain [$cached[2], $fresh];
        is_deeply $cached[0], $cached[2], "$what: $path the same each time";
    }
}

for my $i (0 .. 3) {
    ok turn($on, "hello $i"), "turn $i on the cached pool";
}
ok turn($off, 'hello 4'), 'turn 4 on the uncached pool';
sleep 1.2; # the message rows are kept only for files changed a second ago or more
agree('after five turns');

# the window a turn restores: the cached pool's (from its window cache) against the
# uncached one's, one turn later
ok turn($on, 'warm'), 'a turn on the cached pool: its window cache holds the session';
my ($id1) = grep { (SvcTest::read_file("$mdir/message_$_.json") // '') =~ /"hello 1"/ } 0 .. 20;
ok defined $id1 && rewrite_keep_stat("$mdir/message_$id1.json", 'hello 1', 'HELLO 1'),
    'a message rewritten in place, its size and mtime kept';
my $ta = turn($on, 'probe a');
my $tb = turn($off, 'probe b');
ok $ta && $tb, 'a turn on each pool';
my @ga = @{ given($ta) };
my @gb = @{ given($tb) };
is_deeply [@gb[0 .. $#ga]], \@ga, 'the windows agree (the uncached one a turn longer)'
    or diag explain [\@ga, \@gb];
ok scalar(grep { $_ eq 'HELLO 1' } @ga) && !grep({ $_ eq 'hello 1' } @ga),
    'the cached pool gave the model the rewritten message';
sleep 1.2;
agree('a message rewritten in place');

# the very next messages page after another program's rewrite in place (same inode, size
# and mtime) and its rename over a file, no pause: the cached pool's rows had been served
# without a stat under the directory's watch (core/msgcache.h)
{
    my $page = "$api/$sid/messages?limit=200";
    get($on, $page) for 1 .. 2;
    ok rewrite_keep_stat("$mdir/message_$id1.json", 'HELLO 1', 'HeLLO 1'), 'rewritten in place at once';
    my $rows = get($on, $page);
    is_deeply $rows, get($off, $page), 'the very next page agrees';
    ok scalar(grep { $_->{content} eq 'HeLLO 1' } @{ $rows->{messages} }), 'and shows the rewrite';
    sleep 1.2;
    get($on, $page) for 1 .. 2;
    my $f = "$mdir/message_$id1.json";
    (my $t = SvcTest::read_file($f)) =~ s/HeLLO 1/hEllO 1/ or die;
    SvcTest::write_file("$f.new", $t);
    rename "$f.new", $f or die "rename: $!";
    $rows = get($on, $page);
    is_deeply $rows, get($off, $page), 'renamed over: the very next page agrees';
    ok scalar(grep { $_->{content} eq 'hEllO 1' } @{ $rows->{messages} }), 'and shows it';
}

# a message file added by another program (a Strands agent)
my @ids = sort { $a <=> $b } map { /message_(\d+)\.json$/ ? $1 : () } glob "$mdir/message_*.json";
my $next = $ids[-1] + 1;
my $t = SvcTest::read_file("$mdir/message_$ids[-1].json");
$t =~ s/"message_id":\s*\d+/"message_id": $next/;
SvcTest::write_file("$mdir/message_$next.json", $t);
sleep 1.2;
agree('a message file added');

# the sidecar renamed over with a new title
my $sc = "$root/session_$sid/svc_session.json";
my $j = JSON::PP->new->utf8->decode(SvcTest::read_file($sc));
$j->{title} = 'Renamed behind its back';
SvcTest::write_file("$sc.new", JSON::PP->new->utf8->canonical->encode($j));
rename "$sc.new", $sc or die "rename: $!";
agree('the sidecar renamed over');
is get($on, "$api/$sid")->{title}, 'Renamed behind its back', 'the new title';

# archived through the uncached pool
is $off->req(POST => "$api/$sid/archive")->{status}, 200, 'archived through the uncached pool';
agree('archived through the other pool');

done_testing();
