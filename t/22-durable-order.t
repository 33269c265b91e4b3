#!/usr/bin/perl
# The sync order of a durable turn (sessions.fsync: true), read off strace: what must be on
# disk before the turn's commit record (the fdatasync of its svc_turns.jsonl line) is.
#   - every file renamed into place before the commit was fdatasync'd after it was opened
#     and before its rename, and the directory holding it was fsynced after the rename and
#     before the commit (but agent.json's at the run's end, whose older version is whole);
#   - every directory made before the commit has its parent fsynced after the mkdir and
#     before the commit (a new session's session_<id>/, agents/, agent_<id>/, messages/,
#     multi_agents/: a completed run's session cannot vanish in a power cut);
#   - every file made under its own name (not a temp file) before the commit has its
#     directory fsynced after it, before the commit;
#   - a run after a first run that died before its end syncs the session's directories
#     (the dead run made them without a sync);
#   - SPEC 3: the `running` sidecar is synced, and its directory after its rename, before
#     the first native file (session.json, agent.json, a message file) is opened;
#   - every file renamed into place at all, before the commit or after it (agent.json,
#     svc_memory.json, the final svc_session.json), was fdatasync'd before its rename: a
#     rename can reach the disk before unsynced data, and the name would then hold an empty
#     file after a power cut (make powercut found agent.json, svc_session.json and
#     svc_memory.json so);
#   - at most 15 fsync-family calls on a new session's first turn, 9 on a later turn
#     (core/run.c's budget).
# Each rule is also checked to fail on a log with the step it needs taken out.
use strict;
use warnings;
use Cwd qw(realpath);
use File::Basename qw(dirname);
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

plan skip_all => 'strace not installed' unless system('strace -V >/dev/null 2>&1') == 0;

# Run `svc chat SID TEXT` under strace; returns the parsed calls in order, each
# { call, ok, path, to, fdpath }.
sub traced_turn {
    my ($h, $sid, $text) = @_;
    my $log = "$h->{home}/strace-$sid-$text.log";
    unlink $log;
    {
        local $ENV{SVC_HOME} = $h->{home};
        delete local $ENV{SVC_CONFIG};
        delete local $ENV{SVC_TEST_CRASH_BEFORE_RENAME};
        # LeakSanitizer cannot run under ptrace (make asan)
        local $ENV{ASAN_OPTIONS} = join ':', grep { length } $ENV{ASAN_OPTIONS} // '',
            'detect_leaks=0';
        open(my $save, '>&', \*STDOUT) or die;
        open(STDOUT, '>', '/dev/null') or die;
        my $st = system('strace', '-f', '-qq', '-y', '-s', '4096', '-o', $log, '-e',
            'trace=mkdir,mkdirat,openat,rename,renameat,renameat2,fsync,fdatasync', svc_bin(),
            'chat', $sid, $text);
        open(STDOUT, '>&', $save) or die;
        die "svc chat under strace: exit $st\n" if $st != 0;
    }
    my @calls;
    for my $line (split /\n/, slurp($log) // '') {
        $line =~ s/^\d+\s+//;
        my ($call) = $line =~ /^(\w+)\(/ or next;
        my $ok = $line !~ /\)\s+=\s+-1 /;
        my %c = (call => $call, ok => $ok);
        if ($call eq 'fsync' || $call eq 'fdatasync') {
            ($c{fdpath}) = $line =~ /^\w+\(\d+<([^>]*)>/;
        } elsif ($call eq 'mkdir') {
            ($c{path}) = $line =~ /^mkdir\("([^"]+)"/;
        } elsif ($call eq 'openat') {
            ($c{path}) = $line =~ /^openat\([^,]+, "([^"]+)"/;
            $c{write} = $line =~ /O_WRONLY|O_RDWR/ ? 1 : 0;
            $c{created} = $line =~ /O_CREAT/ && $line =~ /O_EXCL/ ? 1 : 0;
        } elsif ($call =~ /^rename/) {
            my @p = $line =~ /"([^"]+)"/g;
            @c{qw(path to)} = @p[0, 1];
        }
        push @calls, \%c;
    }
    return \@calls;
}

sub is_native { $_[0] =~ m{/\.?(?:session\.json|agent\.json|message_\d+\.json)\.tmp-\d} }

# The rules above; returns the list of broken ones (empty: the log keeps them).
sub check_order {
    my ($calls, $turns) = @_;
    my @bad;
    # the run's commit: the last line synced (a repair of a dead run appends one before)
    my ($commit) = grep {
        $calls->[$_]{call} eq 'fdatasync' && ($calls->[$_]{fdpath} // '') eq $turns
    } reverse 0 .. $#$calls;
    return ('no fdatasync of svc_turns.jsonl') unless defined $commit;
    my $synced_dir = sub { # index of a fsync of $dir in (from, to), or undef
        my ($dir, $from, $to) = @_;
        for my $j ($from + 1 .. $to - 1) {
            return $j if $calls->[$j]{call} eq 'fsync' && ($calls->[$j]{fdpath} // '') eq $dir;
        }
        return undef;
    };
    for my $i (0 .. $commit - 1) {
        my $c = $calls->[$i];
        next unless $c->{ok};
        if ($c->{call} eq 'openat' && $c->{created} && $c->{path} !~ m{\.tmp-|/\.svc[^/]*$}) {
            # a file made under its own name (svc_turns.jsonl): its name synced too; the
            # commit record's own file may have its directory synced right after the line
            my $by = $c->{path} eq $turns ? scalar @$calls : $commit;
            push @bad, "created $c->{path}: directory not synced after it"
                unless defined $synced_dir->(dirname($c->{path}), $i, $by);
        } elsif ($c->{call} eq 'mkdir') {
            push @bad, "mkdir $c->{path}: parent not synced before the commit"
                unless defined $synced_dir->(dirname($c->{path}), $i, $commit);
        } elsif ($c->{call} =~ /^rename/) {
            # the run's end rewrites agent.json without syncing its name, by design (core/
            # run.c's budget: an older agent.json is whole): the one after the message files
            next if $c->{to} =~ m{/agent\.json$} && grep {
                $calls->[$_]{call} =~ /^rename/ && ($calls->[$_]{to} // '') =~ m{/message_\d+\.json$}
            } 0 .. $i - 1;
            push @bad, "rename to $c->{to}: directory not synced before the commit"
                unless defined $synced_dir->(dirname($c->{to}), $i, $commit);
        }
    }
    for my $i (0 .. $#$calls) {
        my $c = $calls->[$i];
        next unless $c->{ok} && $c->{call} =~ /^rename/;
        my ($opened) = grep {
            $calls->[$_]{call} eq 'openat' && $calls->[$_]{write} &&
                ($calls->[$_]{path} // '') eq $c->{path}
        } reverse 0 .. $i - 1;
        my $data = defined $opened && grep {
            $calls->[$_]{call} eq 'fdatasync' && ($calls->[$_]{fdpath} // '') eq $c->{path}
        } $opened + 1 .. $i - 1;
        push @bad, "rename to $c->{to}: data not synced before it" unless $data;
    }
    # the barrier: the sidecar's rename, then its directory synced, then native files
    my ($first_native) = grep {
        $calls->[$_]{call} eq 'openat' && is_native($calls->[$_]{path} // '')
    } 0 .. $#$calls;
    my ($sidecar) = grep {
        $calls->[$_]{call} =~ /^rename/ && $calls->[$_]{ok} && $calls->[$_]{to} =~ m{/svc_session\.json$}
    } 0 .. $#$calls;
    if (!defined $first_native || !defined $sidecar || $sidecar > $first_native) {
        push @bad, 'the running sidecar is not renamed before the first native file';
    } elsif (!defined $synced_dir->(dirname($calls->[$sidecar]{to}), $sidecar, $first_native)) {
        push @bad, 'the sidecar\'s directory is not synced before the first native file';
    }
    return @bad;
}

sub syncs { scalar grep { $_->{call} eq 'fsync' || $_->{call} eq 'fdatasync' } @{ $_[0] } }

my $h = new_home(fsync => 1);
$h->{home} = realpath($h->{home}); # strace -y prints resolved paths
$h->{root} = "$h->{home}/agents/native_sessions";
# a turn on another session first: the root and the memory directory exist, so what is
# counted below is the new session's own
is(svc($h, 'chat', 'warm', 'hello')->{rc}, 0, 'a turn on another session');
my $sid = 'dur';
my $turns = native_dir($h, $sid) . '/svc_turns.jsonl';

my $first = traced_turn($h, $sid, 'one');
my @bad = check_order($first, $turns);
ok(!@bad, 'first turn: everything before the commit record is synced in order')
    or diag join "\n", @bad;
ok(scalar(grep { $_->{call} eq 'mkdir' && $_->{ok} } @$first) >= 4,
    'first turn: the session\'s directories were made in it');
my $n = syncs($first);
ok($n <= 15, "first turn: $n fsync-family calls (at most 15)");

my $second = traced_turn($h, $sid, 'two');
@bad = check_order($second, $turns);
ok(!@bad, 'second turn: everything before the commit record is synced in order')
    or diag join "\n", @bad;
$n = syncs($second);
ok($n <= 9, "second turn: $n fsync-family calls (at most 9)");

# A first run that died after making the session's directories (before its end synced
# them): the next run, which repairs it and completes, syncs them before its commit.
SKIP: {
    skip 'the crash hook needs a test build (make TEST_HOOKS=1)', 3 unless test_hooks_built();
    my $dsid = 'dead';
    my $r = svc($h, { SVC_TEST_CRASH_BEFORE_RENAME => 'message_1.json' }, 'chat', $dsid, 'one');
    is($r->{rc}, 77, 'a first run killed before its answer is stored');
    my $next = traced_turn($h, $dsid, 'two');
    my $ddir = native_dir($h, $dsid);
    my $dturns = "$ddir/svc_turns.jsonl";
    @bad = check_order($next, $dturns);
    my ($commit) = grep {
        $next->[$_]{call} eq 'fdatasync' && ($next->[$_]{fdpath} // '') eq $dturns
    } reverse 0 .. $#$next;
    for my $d ($h->{root}, $ddir, "$ddir/agents", "$ddir/agents/agent_$h->{agent}") {
        push @bad, "$d not synced before the commit" unless defined $commit && grep {
            $next->[$_]{call} eq 'fsync' && ($next->[$_]{fdpath} // '') eq $d
        } 0 .. $commit - 1;
    }
    ok(!@bad, 'the next run syncs the directories the dead run made') or diag join "\n", @bad;
    my $sc = json_file(sidecar_path($h, $dsid));
    is($sc->{turn_count}, 1, 'and completes: turn_count 1');
}

# The checker catches each missing step (so the checks above can fail).
sub without { # the first call pred picks taken out
    my ($calls, $pred) = @_;
    my $done = 0;
    return [grep { $done || !$pred->($_) || !($done = 1) } @$calls];
}
sub without_last {
    my ($calls, $pred) = @_;
    return [reverse @{ without([reverse @$calls], $pred) }];
}
my $dir_of = sub { my $p = shift; sub { $_[0]{call} eq 'fsync' && ($_[0]{fdpath} // '') eq $p } };
my $sdir = native_dir($h, $sid);
my %mutants = (
    'the root\'s fsync' => $dir_of->($h->{root}),
    'the agents directory\'s fsync' => $dir_of->("$sdir/agents"),
    'the agent directory\'s fsync' => $dir_of->("$sdir/agents/agent_$h->{agent}"),
    'the messages directory\'s fsync' => $dir_of->("$sdir/agents/agent_$h->{agent}/messages"),
    'the session directory\'s first fsync' => $dir_of->($sdir),
    'a message file\'s fdatasync' =>
        sub { $_[0]{call} eq 'fdatasync' && ($_[0]{fdpath} // '') =~ m{/\.?message_0\.json\.tmp} },
    'session.json\'s fdatasync' =>
        sub { $_[0]{call} eq 'fdatasync' && ($_[0]{fdpath} // '') =~ m{/\.?session\.json\.tmp} },
);
my $last_of = sub { my $re = shift; sub { $_[0]{call} eq 'fdatasync' && ($_[0]{fdpath} // '') =~ $re } };
for my $m (['agent.json\'s last fdatasync', qr{/\.agent\.json\.tmp}],
           ['svc_memory.json\'s fdatasync', qr{/\.svc_memory\.json\.tmp}],
           ['the final svc_session.json\'s fdatasync', qr{/\.svc_session\.json\.tmp}]) {
    my $cut = without_last($second, $last_of->($m->[1]));
    isnt(scalar @$cut, scalar @$second, "mutant without $m->[0]: the step was in the log");
    ok(scalar(check_order($cut, $turns)) > 0, "mutant without $m->[0]: caught");
}
{
    # the session directory's last fsync before the commit (the one after svc_turns.jsonl
    # was made); the calls after the commit are not looked at
    my ($commit) = grep {
        $first->[$_]{call} eq 'fdatasync' && ($first->[$_]{fdpath} // '') eq $turns
    } 0 .. $#$first;
    my @before = @$first[0 .. $commit];
    my $cut = without_last(\@before, $dir_of->($sdir));
    isnt(scalar @$cut, scalar @before, 'mutant without the session directory\'s last fsync: the step was in the log');
    ok(scalar(check_order($cut, $turns)) > 0, 'mutant without the session directory\'s last fsync: caught');
}
for my $m (sort keys %mutants) {
    my $cut = without($first, $mutants{$m});
    isnt(scalar @$cut, scalar @$first, "mutant without $m: the step was in the log");
    ok(scalar(check_order($cut, $turns)) > 0, "mutant without $m: caught");
}

done_testing();
