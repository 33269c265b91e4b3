#!/usr/bin/perl
# pcfs, the power-cut filesystem of `make powercut`, keeps what it promises (first: the
# power-cut test can only fail where pcfs loses what a disk would), and what `make powercut`
# found, each kept fixed (docs/TESTING.md "Power cuts"; the sync order of a turn is t/22's):
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
use Fcntl qw(O_RDONLY O_DIRECTORY);
use IO::Handle;
use File::Temp qw(tempdir);
use SvcTest;
use PowerCut;

my $J = JSON::PP->new->utf8->canonical;

# ---- pcfs's model ----
{
    my $why = PowerCut::unavailable();
    die "pcfs cannot run here: $why\n" if $why;
    my $t = tempdir('svc-t76-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    mkdir $_ for "$t/b", "$t/m";
    SvcTest::write_file("$t/b/old", "on disk\n");
    my $fs = PowerCut->mount("$t/b", "$t/m", "$t/img");
    my $m = "$t/m";
    my $put = sub {    # write a file, fsync it when asked
        my ($p, $data, $sync) = @_;
        open my $fh, '>', $p or die "$p: $!";
        print $fh $data;
        $fh->flush;
        $fh->sync if $sync;
        close $fh;
    };
    my $dsync = sub { sysopen(my $dh, $_[0], O_RDONLY | O_DIRECTORY) or die "$_[0]: $!"; IO::Handle::sync($dh) or die "fsync $_[0]: $!" };
    mkdir "$m/$_" for qw(d1 d2);
    $dsync->($m);
    $put->("$m/a.tmp", 'A', 1); rename "$m/a.tmp", "$m/a" or die; $dsync->($m);    # the whole sequence
    $put->("$m/b.tmp", 'B', 0); rename "$m/b.tmp", "$m/b" or die; $dsync->($m);    # data never synced
    $put->("$m/c", 'C', 1);                                                        # name never synced
    $put->("$m/d", 'D', 0);                                                        # nothing synced
    open my $fh, '>>', "$m/old" or die; print $fh "more\n"; close $fh;             # an append, unsynced
    $put->("$m/d1/f", 'F', 1); $dsync->("$m/d1");
    rename "$m/d1/f", "$m/d2/f" or die; $dsync->("$m/d2");                        # one side synced
    my $st = $fs->ctl('cut');
    is($st->{syncs}, 8, 'pcfs counted the syncs that reached it (3 files, 5 directories)');
    ok(!-e "$m/a", 'after the cut the mount answers nothing');
    $fs->unmount;
    my %want = (
        strict => { a => 'A', b => '', old => "on disk\n", 'd2/f' => 'F' },
        journal => { a => 'A', b => '', c => 'C', d => '', old => "on disk\n", 'd2/f' => 'F' },
    );
    for my $view (sort keys %want) {
        my $root = "$t/img/$view";
        my %got = map { my $r = s{^\Q$root\E/}{}r; ($r => SvcTest::read_file($_)) } grep { -f } SvcTest::files_under($root);
        is_deeply(\%got, $want{$view}, "$view: the tree a disk could hold");
    }
    # a cut at the N-th sync fails that sync
    my $fs2 = PowerCut->mount("$t/img/strict", "$t/m", "$t/img2", '--cut-sync=2');
    $put->("$m/x", 'X', 1);
    open my $fx, '>', "$m/y" or die; print $fx 'Y'; $fx->flush;
    ok(!$fx->sync, 'the second sync fails: the power is cut');
    close $fx;
    $fs2->unmount;
    is(SvcTest::read_file("$t/img2/strict/x"), undef, 'x, synced but not its name, is not on the disk');
    is($fs2->status->{at_sync}, 2, 'pcfs says it cut at sync 2');
}

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
