#!/usr/bin/perl
# Ops (issue 12): permissions. The socket svc-fcgi creates has server.socket_mode (0660) and
# server.socket_group; session and memory files are 0640 in 0750 directories
# (server.umask 027); started as root with --user it drops privileges after binding. As
# root, two throwaway system users are created: the service user and another local user,
# who can neither connect to the socket nor read a transcript.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Find;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use SvcTest;
use SvcOps;

sub chat { { session_id => $_[0], messages => [{ role => 'user', content => $_[1] }] } }

# Modes of everything the service created under $top: {path => mode}.
sub modes_under {
    my ($top) = @_;
    my %m;
    find({ no_chdir => 1, wanted => sub { $m{$File::Find::name} = (lstat $_)[2] } }, $top);
    return \%m;
}

sub check_modes {
    my ($top, $what, $min) = @_;
    my $m = modes_under($top);
    my @files = grep { -f $_ } keys %$m;
    my @dirs = grep { -d $_ } keys %$m;
    ok @files >= ($min // 4), "$what: files were written (" . scalar(@files) . ')';
    my @bad_f = grep { ($m->{$_} & 07777) != 0640 } @files;
    my @bad_d = grep { ($m->{$_} & 07777) != 0750 } @dirs;
    is_deeply \@bad_f, [], "$what: every file is 0640"
        or diag join "\n", map { sprintf '%o %s', $m->{$_} & 07777, $_ } @bad_f;
    is_deeply \@bad_d, [], "$what: every directory is 0750"
        or diag join "\n", map { sprintf '%o %s', $m->{$_} & 07777, $_ } @bad_d;
}

my $dir = SvcOps::tmpdir();

# ==== as whoever runs the tests: modes ====
{
    my $home = SvcTest->make_home("server:\n  workers: 1\n");
    chmod 0755, $home;
    my $p = SvcOps::pool(home => $home, sock => "$dir/a.sock", workers => 1);
    is +(stat "$dir/a.sock")[2] & 07777, 0660, 'socket 0660';
    my $n = SvcOps::nginx(dir => "$dir/ngx", upstream => "server unix:$dir/a.sock;");
    my $u = "http://127.0.0.1:$n->{port}";
    is SvcOps::http(POST => "$u/api/chat", body => chat('perm-1', 'secret words'))->{status}, 200,
        'a chat';
    is SvcOps::http(POST => "$u/api/chat", body => chat('perm-1', 'more'))->{status}, 200, 'a turn more';
    check_modes("$home/agents", 'session root');
    # memory sync (SPEC 8) writes under memory.root when this build has it
    # (memory.jsonl and its .memory.lock)
    if (-d "$home/memory") { check_modes("$home/memory", 'memory root', 2) }
    else { note 'no memory root written by this build: its modes follow the same umask' }
    SvcOps::stop_pid($n->{pid});
    SvcOps::stop_pid($p->{pid});

    # the svc tool writes as svc-fcgi does, whatever the shell's umask
    my $old = umask 022;
    local $ENV{SVC_HOME} = $home;
    my $o = `${\ SvcTest::build()}/svc chat cli-perm hello 2>&1`;
    umask $old;
    is $?, 0, 'svc chat' or diag $o;
    check_modes("$home/agents/native_sessions/session_cli-perm", 'svc chat under umask 022');

    # another mode and umask
    my $h2 = SvcTest->make_home("server:\n  socket_mode: \"0600\"\n  umask: \"077\"\n");
    $p = SvcOps::pool(home => $h2, sock => "$dir/b.sock", workers => 1);
    is +(stat "$dir/b.sock")[2] & 07777, 0600, 'server.socket_mode 0600';
    SvcOps::stop_pid($p->{pid});
}

SKIP: {
    skip 'creating a second user needs root (run make test as root to check it)', 14 if $> != 0;
    skip 'useradd missing', 14 unless -x '/usr/sbin/useradd';
    my $tag = sprintf '%04x', int rand 65536;
    my ($svc, $other) = ("svct-$tag", "svco-$tag");
    my @made;
    for my $u ($svc, $other) {
        my $ok;
        for (1 .. 20) {    # /etc/passwd may be locked by a concurrent useradd
            $ok = system('useradd', '--system', '--user-group', '--no-create-home',
                         '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', $u) == 0;
            last if $ok;
            select undef, undef, undef, 0.5;
        }
        ok $ok, "useradd $u";
        push @made, $u if $ok;
    }
    END { system('userdel', $_) for @made }
    my (undef, undef, $suid, $sgid) = getpwnam($svc);
    my (undef, undef, $ouid, $ogid) = getpwnam($other);

    # the socket's directory belongs to the service user (as RuntimeDirectory= makes it)
    mkdir "$dir/run";
    chown $suid, $sgid, "$dir/run";
    my $home = SvcTest->make_home("server:\n  workers: 2\n  socket_group: $svc\n");
    chmod 0755, $home;
    chown $suid, $sgid, $home, "$home/agents.yaml";
    my $p = SvcOps::pool(home => $home, sock => "$dir/run/r.sock", workers => 2,
                         args => ['--user', $svc]);
    my @st = stat "$dir/run/r.sock";
    is $st[5], $sgid, 'socket group is server.socket_group';
    is $st[2] & 07777, 0660, 'socket 0660';
    # the master and its workers (forked after the socket is made: wait for both under load)
    my $family = sub {
        grep { defined } map { (SvcOps::slurp("/proc/$_/status") =~ /^Uid:\s+(\d+)\s+(\d+)/m)[1] }
            ($p->{pid}, grep { ((SvcOps::slurp("/proc/$_/stat") =~ /^\d+ \(.*\) \S (\d+)/)[0] // -1) == $p->{pid} }
                            map { m{/proc/(\d+)/} ? $1 : () } glob '/proc/[0-9]*/stat');
    };
    my @uids;
    SvcTest::wait_for(15, sub { @uids = $family->(); @uids >= 3 });
    ok @uids >= 3 && !grep({ $_ != $suid } @uids), "master and workers run as $svc (--user)"
        or diag "uids: @uids";
    my $n = SvcOps::nginx(dir => "$dir/ngx-r", upstream => "server unix:$dir/run/r.sock;");
    my $u = "http://127.0.0.1:$n->{port}";
    is SvcOps::http(POST => "$u/api/chat", body => chat('priv-1', 'private words'))->{status}, 200,
        'a chat served by the unprivileged pool';
    my $msg = "$home/agents/native_sessions/session_priv-1/agents/agent_svc-agent/messages/message_0.json";
    ok -f $msg, 'transcript written';
    is +(stat $msg)[4], $suid, "owned by $svc";

    # the other user: no connect, no read (tried in a child that became that user)
    my $try = sub {
        my ($code) = @_;
        my $pid = fork // die;
        if ($pid == 0) {
            $( = $) = "$ogid $ogid";
            $< = $> = $ouid;
            POSIX::_exit($> == $ouid ? $code->() : 99);
        }
        waitpid $pid, 0;
        return $? >> 8;
    };
    is $try->(sub { IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => "$dir/run/r.sock") ? 0 : ($!{EACCES} ? 13 : 1) }),
        13, 'another local user cannot connect to the socket (EACCES)';
    is $try->(sub { open(my $fh, '<', $msg) ? 0 : ($!{EACCES} ? 13 : 1) }), 13,
        'nor read a transcript';
    is $try->(sub { opendir(my $dh, "$home/agents/native_sessions") ? 0 : ($!{EACCES} ? 13 : 1) }),
        13, 'nor list the sessions';
    is $try->(sub { open(my $fh, '<', "$home/agents.yaml") ? 0 : 1 }), 0,
        '(the same child can read a file that is meant to be readable: the check is real)';
    SvcOps::stop_pid($n->{pid});
    SvcOps::stop_pid($p->{pid});
    ok !-e "$dir/run/r.sock", 'the unprivileged master removed its socket on stop';

    # --user without root is refused
    mkdir "$dir/oth";
    chown $ouid, $ogid, "$dir/oth";
    my $pid = fork // die;
    if ($pid == 0) {
        $( = $) = "$ogid $ogid";
        $< = $> = $ouid;
        open STDERR, '>', "$dir/oth/nr.err";
        open STDIN, '<', '/dev/null';
        exec SvcTest::fcgi_bin(), '--listen', "unix:$dir/oth/x.sock", '--user', $svc or POSIX::_exit(127);
    }
    waitpid $pid, 0;
    is $? >> 8, 3, '--user as another non-root user: exit 3';
    like SvcOps::slurp("$dir/oth/nr.err"), qr/--user\/--group: changing identity needs root/, 'one line saying why';
}

done_testing;
