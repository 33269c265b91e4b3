#!/usr/bin/perl
# docs/OPS.md's several-hosts guide works as written (issue 35, item 5): its own blocks are
# read from the document (```sh hosts-volume, ```sh hosts-mount, ```yaml hosts-config,
# ```nginx hosts-upstream), the example's names and addresses replaced by this machine's
# (both "hosts" here: the bricks on the root filesystem, each pool on a loopback address of
# its own, nginx's connections coming from 127.0.0.1), and run: the GlusterFS volume, a mount
# for each host, a pool on each with the per-host configuration, nginx with the upstream.
# Then a turn through nginx is read on both pools, a FastCGI peer outside the allow list
# gets nothing, and the upstream's name is the one the shipped snippets pass to. glusterd
# is machine-wide: t/lib/Gluster.pm holds /tmp/svc-gluster.lock while it runs.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use SvcTest;
use SvcOps;
use FcgiClient;
use Gluster;

my $J = JSON::PP->new->utf8;
my $ops = SvcTest::read_file(SvcTest->repo . '/docs/OPS.md') // '';
my %block;
$block{$2} = $3 while $ops =~ /^```(\w+) (hosts-[\w-]+)\n(.*?)^```$/msg;
ok $block{$_}, "docs/OPS.md has the block $_" for qw(hosts-volume hosts-mount hosts-config hosts-upstream);

# the upstream's name is the one the shipped snippets pass to
my ($name) = ($block{'hosts-upstream'} // '') =~ /upstream\s+(\w+)\s*\{/;
my %passes;
for my $f (glob(SvcTest->repo . '/nginx/*.conf')) {
    my $text = SvcTest::read_file($f) // '';
    $passes{$1}++ while $text =~ /^\s*fastcgi_pass\s+(\w+);/mg;
}
is_deeply [keys %passes], [$name // 'none'], "the guide's upstream ($name) is the one the shipped files use";

my $g = eval { Gluster->start(volume => 0) };
unless ($g) {
    fail('glusterd runs here');
    diag $@;
    done_testing;
    exit 1;
}
my $h = $g->host;
my $dir = $g->dir;
my $vol = "svcg$$";

# The guide's text with this machine's names: host svcN's paths under $dir/hostN.
sub ours {
    my ($text, $host) = @_;
    $text =~ s{\bsvc([12]):/srv/gluster/svcvol}{$h:$dir/brick$1}g;
    $text =~ s/\bsvcvol\b/$vol/g;
    $text =~ s/\bsvc[12]\b/$h/g;
    $text =~ s{/srv/svc\b}{$dir/mnt$host}g if $host;
    return $text;
}
sub run_block {
    my ($what, $text) = @_;
    local $ENV{PATH} = "$ENV{PATH}:/usr/sbin:/sbin";
    my $log = $g->cli_log;
    # the gluster CLI without its questions, logging beside glusterd's; the guide's lines
    # as they are otherwise
    my $sh = "set -e\ngluster() { command gluster --mode=script --log-file='$log' \"\$@\"; }\n$text";
    SvcTest::write_file("$dir/step.sh", $sh);
    my $out = `bash '$dir/step.sh' 2>&1`;
    is $?, 0, $what or diag "$text\n---\n$out";
}

run_block('the volume, as the guide creates it', ours($block{'hosts-volume'}));
$g->track(volume => $vol);
for my $n (1, 2) {
    run_block("the mount of host $n", ours($block{'hosts-mount'}, $n));
    $g->track(mount => "$dir/mnt$n");
}
my @fs = map { `stat -f -c %T $dir/mnt$_` =~ s/\s+//r } 1, 2;
is_deeply \@fs, ['fuseblk', 'fuseblk'], 'both hosts mount the volume (FUSE)' or diag "@fs";

# a pool on each host with its configuration from the guide
my $token = 'hosts-guide-token';
my (@port, @pool);
for my $n (1, 2) {
    $port[$n] = SvcTest::free_port();
    my $yaml = ours($block{'hosts-config'}, $n);
    $yaml =~ s/tcp:10\.0\.0\.11:9000/tcp:127.0.0.1$n:$port[$n]/;    # this host's address and a free port
    $yaml =~ s/\b10\.0\.0\.10\b/127.0.0.1/g;                        # the nginx host
    SvcTest::write_file("$dir/host$n.yaml", $yaml);
    my $home = SvcTest->make_home('');
    $pool[$n] = SvcOps::pool(home => $home, config => "$dir/host$n.yaml", listen => "tcp:127.0.0.1$n:$port[$n]",
                             log => "$dir/pool$n.log", workers => 2, env => { SVC_API_TOKEN => $token });
}
$g->before_stop(sub { SvcOps::stop_pid($_->{pid}) for grep { $_ } @pool });

# nginx on the "web" host with the guide's upstream
my ($body) = ours($block{'hosts-upstream'}) =~ /\{\n(.*)\}/s;
$body =~ s/10\.0\.0\.1([12]):9000/"127.0.0.1$1:" . $port[$1]/ge;
my $n = SvcOps::nginx(upstream => $body);
my $cli = bless { port => $n->{port}, http => HTTP::Tiny->new(timeout => 30, keep_alive => 0) }, 'SvcTest';
my $auth = { authorization => "Bearer $token" };
my $r = $cli->req(POST => '/api/chat', headers => { %$auth, 'x-session-id' => 'hg-1' },
                  body => { session_id => 'hg-1', messages => [{ role => 'user', content => 'across hosts' }] });
is $r->{status}, 200, 'a turn through nginx' or diag $r->{body};

# both pools (asked directly, as the nginx host) see it, and say their root is shared
for my $i (1, 2) {
    my $d = FcgiClient::request(to => "127.0.0.1$i:$port[$i]", from => '127.0.0.1',
                                params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/v1/chat/sessions/hg-1',
                                            HTTP_AUTHORIZATION => "Bearer $token" });
    is eval { $J->decode($d->{body})->{message_count} }, 2, "host $i reads the session" or diag explain $d;
    my $hl = FcgiClient::request(to => "127.0.0.1$i:$port[$i]", from => '127.0.0.1',
                                 params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' });
    is eval { $J->decode($hl->{body})->{sessions}{shared} }, JSON::PP::true, "host $i: its root is shared";
    ok FcgiClient::request(to => "127.0.0.1$i:$port[$i]", from => '127.0.0.5',
                           params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' })->{closed},
       "host $i: a FastCGI peer outside server.fcgi_allow gets nothing";
}
ok -s "$dir/mnt1/memory/svc-agent/memory.jsonl", 'the memory digests are on the volume';

SvcOps::stop_pid($n->{pid});
$g->stop;
done_testing;
