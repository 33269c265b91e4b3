#!/usr/bin/perl
# A lost lock (SPEC 10; issue 24): on NFS a lock the server dropped shows as EIO on the
# descriptor, or ENOLCK when the lock manager refuses one. strace's fault injection, with
# no hook in the product, makes each flock of a POST /api/chat in turn (the run lock, the
# session lock each time it is taken, the index and memory locks) fail with EIO and with
# ENOLCK, and then each write, rename and fsync of the turn fail with EIO once. Each time:
# a 200 with the turn stored, or a 500 io_error whose message names what failed and the
# errno (not 503 + x-should-retry: svc cannot tell a dropped lock from a failing root, and
# after "the answer was produced but could not be recorded" a retry would ask twice); the
# session whole afterwards (detail, messages with contiguous ids, a question without its
# answer only with its run recorded as error, `svc fsck` clean, status not `running`); and
# the next turn works.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

system('strace -V >/dev/null 2>&1') == 0 or BAIL_OUT('strace is needed (scripts/install-deps)');
# fsync on: its failure is one of the faults
my $s = SvcTest->start(workers => 1, config => "sessions:\n  fsync: true\n");
my $home = $s->home;
my $svc = SvcTest::build() . '/svc';

sub chat {
    my ($sid, $text) = @_;
    return $s->req(POST => '/api/chat',
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub fsck_out { my $o = `SVC_HOME='$home' '$svc' fsck 2>&1`; return ($? >> 8, $o) }

# POST /api/chat on $sid with strace injecting @inject into the one worker.
sub chat_faulted {
    my ($sid, $trace, $inject) = @_;
    my ($pid) = $s->worker_pids;
    my $log = "$home/strace.$sid";
    my $spid = SvcTest::strace_start($pid, $log, '-f', '-e', "trace=$trace", '-e', "inject=$inject");
    my $r = chat($sid, "faulted turn on $sid");
    my $trace_text = SvcTest::strace_stop($spid, $log);
    return ($r, $trace_text);
}

sub ids_of {
    my ($sid) = @_;
    my $m = $s->req(GET => "/api/v1/chat/sessions/$sid/messages?limit=100");
    return ($m->{status}, map { $_->{message_id} // $_->{id} } @{ $m->{json}{messages} || [] });
}

# One faulted turn on a fresh session, then every check. Returns false once the Nth call
# was never reached (the loop over N is done).
sub faulted_turn {
    my ($kind, $trace, $inject) = @_;
    my $sid = $inject =~ s/[^A-Za-z0-9]+/-/gr;
    is chat($sid, "first turn on $sid")->{status}, 200, "$sid: a first turn";
    my ($bad, $tr) = chat_faulted($sid, $trace, $inject);
    my ($hit) = $tr =~ /^(.*\(INJECTED\).*)$/m;
    return 0 unless $hit;
    note "$sid: $hit -> $bad->{status} " . ($bad->{body} // '');
    my $lost_answer = $hit =~ /Status: \d{3}/; # the fault hit the FastCGI answer itself
    if ($lost_answer) {
        isnt $bad->{status}, 200, "$sid: the answer itself failed: not a 200";
    } elsif ($bad->{status} != 200) {
        is $bad->{status}, 500, "$sid: 500";
        is $bad->{json}{error}{code}, 'io_error', "$sid: io_error";
        like $bad->{json}{error}{message}, qr/\w: (Input\/output error|No locks available)$/,
            "$sid: the message says what failed and why";
    }
    my $d = $s->req(GET => "/api/v1/chat/sessions/$sid");
    is $d->{status}, 200, "$sid: detail answers";
    my $st = $d->{json}{status} // '';
    isnt $st, 'running', "$sid: status not left running ($st)";
    my ($ms, @ids) = ids_of($sid);
    is $ms, 200, "$sid: messages answer";
    is_deeply \@ids, [0 .. $#ids], "$sid: ids contiguous (@ids)";
    my $n = @ids;
    if ($bad->{status} == 200) { is $n, 4, "$sid: answered 200: the turn is stored" }
    else { ok $n >= 2 && $n <= 4, "$sid: nothing torn ($n messages)" }
    if ($n == 3) { # SPEC 3: the user message is stored when the run begins and stays
        my @turns = $s->turn_lines($sid);
        is $turns[-1]{status}, 'error', "$sid: a stored question without its answer: the run says error";
    }
    my ($rc, $out) = fsck_out();
    is $rc, 0, "$sid: svc fsck clean" or diag $out;
    is chat($sid, "next turn on $sid")->{status}, 200, "$sid: the next turn works";
    ($ms, @ids) = ids_of($sid);
    is_deeply \@ids, [0 .. $n + 1], "$sid: the next turn added its two messages, ids contiguous";
    return 1;
}

# Every flock of a turn (the run lock, the session lock each time it is taken, the index
# and memory locks) fails as a lost lock does; then one write, rename or fsync after them.
my %faults = (
    'flock,fcntl'     => ['flock:error=EIO', 'flock:error=ENOLCK'],
    'write'           => ['write:error=EIO'],
    'rename,renameat,renameat2' => ['rename,renameat,renameat2:error=EIO'],
    'fsync,fdatasync' => ['fsync,fdatasync:error=EIO'],
);
for my $trace (sort keys %faults) {
    for my $f (@{ $faults{$trace} }) {
        my $n = 1;
        $n++ while $n < 40 && faulted_turn($trace, $trace, "$f:when=$n");
        ok $n > 1 && $n < 40, "$f: a turn has " . ($n - 1) . ' such calls, each one failed once';
    }
}

my ($rc, $out) = fsck_out();
is $rc, 0, 'svc fsck clean at the end' or diag $out;
done_testing;
