#!/usr/bin/perl
# What `make powercut` found, each kept fixed (docs/TESTING.md "Power cuts"; the sync order
# of a turn is t/22's):
#   - a synchronous run's record is written without a sync, so a power cut can leave it
#     empty: the API answers 404 run_not_found for it (not 500), and `svc fsck` reports
#     it as empty_run_record and --repair removes it;
#   - a new session's first run cut before it stored a message leaves its directory with
#     the `running` sidecar and without session.json or agent.json (ext4 commits the
#     names of the directories before the data of the files): `svc fsck` reports it as
#     unborn_session, not as missing files, and --repair writes them fresh; items added to
#     it through the Conversations API are stored (it answered 500: no messages directory);
#   - `svc import` and `svc export` on a FUSE filesystem (pcfs here; GlusterFS in
#     production) leave their sessions and bundles whole after a power cut once they said
#     they were done: they synced with syncfs(2), which FUSE never passes on.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use File::Temp qw(tempdir);
use SvcTest;
use PowerCut;

my $J = JSON::PP->new->utf8->canonical;

# ---- an empty run record ----
{
    my $s = SvcTest->start(config => "sessions:\n  fsync: true\n");
    my $r = $s->req(POST => '/api/chat', body => { session_id => 'rec', messages => [{ role => 'user', content => 'hi' }] });
    is($r->{status}, 200, 'a synchronous turn');
    my $run = $r->{json}{run_id};
    my $rec = $s->root . "/.svc_runs/$run.json";
    ok(-s $rec, 'its run record is there');
    is($s->req(GET => "/api/chat/runs/$run")->{status}, 200, 'and answered');
    open my $fh, '>', $rec or die;    # what a power cut leaves of it
    close $fh;
    $r = $s->req(GET => "/api/chat/runs/$run");
    is($r->{status}, 404, 'an empty record: 404') or diag $r->{body};
    is($r->{json}{error}{code}, 'run_not_found', 'run_not_found');
    my $fsck = sub {
        local $ENV{SVC_HOME} = $s->home;
        local $ENV{SVC_CONFIG} = $s->home . '/agents.yaml';
        my $out = `'@{[SvcTest::build()]}/svc' fsck --json @_ 2>/dev/null`;
        return $J->decode($out);
    };
    my $rep = $fsck->();
    is_deeply([map { "$_->{kind} $_->{file}" } @{ $rep->{problems} }], ["empty_run_record .svc_runs/$run.json"],
        'fsck reports it, and nothing else');
    $rep = $fsck->('--repair');
    ok($rep->{problems}[0]{repaired}, 'fsck --repair removes it');
    ok(!-e $rec, 'gone');
    is($fsck->()->{counts}{problems}, 0, 'a second fsck finds nothing');

    # an unborn session: its directory and its sidecar only
    is($s->req(POST => '/api/chat', body => { session_id => 'unborn', messages => [{ role => 'user', content => 'hi' }] })->{status},
        200, 'a turn on another session');
    my $d = $s->root . '/session_unborn';
    system('rm', '-rf', "$d/agents", "$d/session.json", "$d/svc_turns.jsonl") == 0 or die;
    my $sc = $J->decode(SvcTest::read_file("$d/svc_session.json"));
    @$sc{qw(status message_count)} = ('running', 0);    # as its first run began
    SvcTest::write_file("$d/svc_session.json", $J->encode($sc));
    $r = $s->req(POST => '/api/v1/conversations/unborn/items',
        body => { items => [{ type => 'message', role => 'user', content => 'after the cut' }] });
    is($r->{status}, 200, 'items added to an unborn session') or diag $r->{body};
    $r = $s->req(GET => '/api/v1/conversations/unborn/items?order=asc');
    is_deeply([map { $_->{content}[0]{text} } @{ $r->{json}{data} || [] }], ['after the cut'], 'and stored');
    my $left = $fsck->();
    is($left->{counts}{problems}, 0, "fsck finds nothing to repair") or diag explain $left->{problems};
    $s->stop;
}

# ---- a first run cut before its first message ----
{
    my $t = tempdir('svc-t76-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    SvcTest::write_file("$t/agents.yaml", "sessions:\n  fsync: true\n");
    local $ENV{SVC_HOME} = $t;
    local $ENV{SVC_CONFIG} = "$t/agents.yaml";
    my $svc = SvcTest::build() . '/svc';
    system("'$svc' chat born 'hello' >/dev/null") == 0 or die;
    my $d = "$t/agents/native_sessions/session_born";
    my $sc = $J->decode(SvcTest::read_file("$d/svc_session.json"));
    $sc->{status} = 'running';    # what the cut left: the first write, and the directories
    SvcTest::write_file("$d/svc_session.json", $J->encode($sc));
    unlink "$d/session.json", "$d/svc_turns.jsonl", "$d/agents/agent_svc-agent/agent.json",
        glob("$d/agents/agent_svc-agent/messages/*");
    my $fsck = sub { $J->decode(scalar `'$svc' fsck --json @_ 2>/dev/null`) };
    my $kinds = sub { [sort map { $_->{kind} } @{ $_[0]{problems} }] };
    is_deeply($kinds->($fsck->()), [qw(stale_run unborn_session)], 'fsck: a stale run in an unborn session, no missing files');
    my $rep = $fsck->('--repair');
    ok(!grep({ !$_->{repaired} } @{ $rep->{problems} }), 'fsck --repair repairs both');
    ok(-s "$d/session.json" && -s "$d/agents/agent_svc-agent/agent.json", 'session.json and agent.json written');
    is($fsck->()->{counts}{problems}, 0, 'a second fsck finds nothing');
    is(system("'$svc' chat born 'again' >/dev/null"), 0, 'and the session takes a run');
}

# ---- import and export on FUSE ----
{
    my $why = PowerCut::unavailable();
    die "pcfs cannot run here: $why\n" if $why;
    my $t = tempdir('svc-t76-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $svc = SvcTest::build() . '/svc';
    mkdir $_ for "$t/src", "$t/backing", "$t/mnt";
    SvcTest::write_file("$t/agents.yaml", "sessions:\n  fsync: true\n  shared: off\n");
    local $ENV{SVC_CONFIG} = "$t/agents.yaml";
    {
        local $ENV{SVC_HOME} = "$t/src";
        for my $sid (qw(a b)) {
            system("'$svc' chat $sid 'hello $sid' >/dev/null") == 0 or die;
        }
        system("'$svc' export --out '$t/bundles' >/dev/null 2>&1") == 0 or die 'export';
    }
    my ($bundle) = glob "$t/bundles/chat-export-*";
    my $fs = PowerCut->mount("$t/backing", "$t/mnt", "$t/img");
    local $ENV{SVC_HOME} = "$t/mnt";
    is(system("'$svc' import '$bundle' >/dev/null 2>&1"), 0, 'svc import onto pcfs');
    is(system("'$svc' export --out '$t/mnt/out' >/dev/null 2>&1"), 0, 'svc export onto pcfs');
    my $st = $fs->ctl('cut');
    ok($st && $st->{cut}, 'the power is cut');
    $fs->unmount;
    my $root = "$t/img/strict/agents/native_sessions";
    for my $sid (qw(a b)) {
        my @f = glob "$root/session_$sid/agents/agent_svc-agent/messages/message_*.json";
        is(scalar(grep { my $d = SvcTest::read_file($_); defined $d && eval { $J->decode($d); 1 } } @f), 2,
            "imported session $sid: its two messages whole after the cut");
    }
    my ($out) = glob "$t/img/strict/out/chat-export-*";
    my $man = $out && eval { $J->decode(SvcTest::read_file("$out/manifest.json")) };
    ok($man, 'the export\'s manifest is whole after the cut');
    my @bad = grep { (sha256_hex(SvcTest::read_file("$out/$_->{path}") // '') ne $_->{sha256}) }
        @{ $man ? $man->{files} : [] };
    ok($man && @{ $man->{files} } && !@bad, 'every file of the export is whole')
        or diag 'torn: ' . join ', ', map { $_->{path} } @bad;
}

done_testing();
