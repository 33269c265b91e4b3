#!/usr/bin/perl
# Ops (issue 12): `make install PREFIX=... DESTDIR=...` installs both programs, the units
# (User=svc, StateDirectory, RuntimeDirectory, UMask=0027, KillMode=process), sysusers.d and
# tmpfiles.d files, the nginx and Apache files, and /etc/svc/agents.yaml without ever
# overwriting an existing one; the units pass `systemd-analyze verify` and the service's
# `systemd-analyze security` exposure is at most 4.0; the installed nginx files load.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use SvcOps;

my $repo = $SvcTest::REPO;
my $dest = SvcOps::tmpdir();
my $prefix = '/opt/svc-t';
my $B = SvcTest::build();

# the build's own flags: `make install` builds what is out of date first, and a test build
# remade without its hooks would fail the tests that use them (t/50's crash loop)
my $hooks = SvcTest::test_hooks_built() ? 'TEST_HOOKS=1' : '';
sub install {
    my $out = `make -s --no-print-directory -C $repo install B=$B $hooks PREFIX=$prefix DESTDIR=$dest 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = install();
is $rc, 0, 'make install' or diag $out;
for my $p ("$prefix/bin/svc", "$prefix/bin/svc-fcgi") {
    ok -x "$dest$p", "$p installed";
}
my $udir = "$dest$prefix/lib/systemd/system";
my $svc = SvcTest::read_file("$udir/svc.service") // '';
like $svc, qr/^ExecStart=\Q$prefix\E\/bin\/svc-fcgi$/m, 'ExecStart follows PREFIX';
like $svc, qr/^$_$/m, "svc.service: $_"
    for ('User=svc', 'StateDirectory=svc', 'RuntimeDirectory=svc', 'UMask=0027', 'KillMode=process',
         'StandardInput=socket', 'Environment=SVC_CONFIG=/etc/svc/agents.yaml');
my $sock = SvcTest::read_file("$udir/svc.socket") // '';
like $sock, qr/^SocketMode=0660$/m, 'svc.socket: 0660';
like $sock, qr/^SocketGroup=www-data$/m, 'svc.socket: group of the web server';
like SvcTest::read_file("$dest$prefix/lib/sysusers.d/svc.conf") // '',
    qr{^u svc - ".*" /var/lib/svc }m, 'sysusers.d/svc.conf creates the svc user';
like SvcTest::read_file("$dest$prefix/lib/tmpfiles.d/svc.conf") // '',
    qr{^d /var/lib/svc 0750 svc svc}m, 'tmpfiles.d/svc.conf';
for my $f (qw(svc.service svc.socket), grep { -e "$repo/nginx/$_" } qw(svc-jobs.service svc-jobs.timer)) {
    ok -f "$udir/$f", "unit $f installed";
}
for my $f (qw(svc.conf svc-api.conf svc-model.conf svc-stream.conf svc-errors.conf
              fastcgi_params.conf svc-upstream.conf)) {
    ok -f "$dest/etc/nginx/svc/$f", "nginx/$f in /etc/nginx/svc";
}
ok -d "$dest/etc/nginx/svc/model.d", 'the model.d directory for ops';
ok -f "$dest/etc/nginx/svc/dashboard/$_", "dashboard/$_ in /etc/nginx/svc/dashboard" for qw(index.html app.js api.js markdown.js style.css);
ok -f "$dest$prefix/share/svc/apache/apache-proxy-fcgi.conf", 'Apache files';
# the README and every guide it links to (docs/*.md, the screenshot), installed with the
# same relative paths so that the links hold
my $doc = "$dest$prefix/share/doc/svc";
ok -f "$doc/README", 'share/doc/svc/README';
my @links = (SvcTest::read_file("$repo/README") // '') =~ m{\b(docs/[\w.-]+\.(?:md|png))\b}g;
my %seen;
@links = grep { !$seen{$_}++ } @links;
ok scalar(grep { m{\.md$} } @links) >= 5, 'the README links the guides in docs/' or diag "@links";
for my $l (@links) {
    ok -f "$repo/$l", "$l exists";
    ok -f "$doc/$l", "share/doc/svc/$l installed";
}
ok -f "$doc/$_", "share/doc/svc/$_" for map { s{^\Q$repo/\E}{}r } glob "$repo/docs/*.md";

my $conf = "$dest/etc/svc/agents.yaml";
is SvcTest::read_file($conf), SvcTest::read_file("$repo/conf/agents.yaml"), '/etc/svc/agents.yaml';
is +(stat $conf)[2] & 07777, 0640, 'mode 0640';
SvcTest::write_file($conf, "server:\n  workers: 3\n");
($rc, $out) = install();
is $rc, 0, 'make install again';
is SvcTest::read_file($conf), "server:\n  workers: 3\n", 'an existing agents.yaml is never overwritten';

SKIP: {
    skip 'systemd-analyze missing', 3 unless -x '/usr/bin/systemd-analyze';
    # verify needs ExecStart to exist: point it at the installed binary
    my $v = SvcOps::tmpdir();
    (my $t = $svc) =~ s/^ExecStart=.*$/ExecStart=$dest$prefix\/bin\/svc-fcgi/m;
    SvcTest::write_file("$v/svc.service", $t);
    SvcTest::write_file("$v/svc.socket", $sock);
    my $vo = `cd $v && systemd-analyze verify svc.socket svc.service 2>&1`;
    is $?, 0, 'systemd-analyze verify';
    is $vo, '', 'without a complaint' or diag $vo;
    my $so = `cd $v && systemd-analyze security --offline=yes svc.service 2>&1`;
    my ($score) = $so =~ /Overall exposure level for svc\.service: ([\d.]+)/;
    ok defined $score && $score <= 4.0, 'systemd-analyze security: ' . ($score // '?') . ' <= 4.0'
        or diag $so;
}

SKIP: {
    skip 'systemd-sysusers/systemd-tmpfiles missing', 4
        unless -x '/usr/bin/systemd-sysusers' && -x '/usr/bin/systemd-tmpfiles';
    skip 'applying tmpfiles.d ownership needs root', 4 if $> != 0;
    # both files applied to the staged tree as to a real root
    my $so = `systemd-sysusers --root=$dest $dest$prefix/lib/sysusers.d/svc.conf 2>&1`;
    is $?, 0, 'systemd-sysusers accepts sysusers.d/svc.conf' or diag $so;
    my ($uid, $gid) = (SvcTest::read_file("$dest/etc/passwd") // '') =~ /^svc:x:(\d+):(\d+):/m;
    ok defined $uid, 'it creates the svc user';
    my $to = `systemd-tmpfiles --create --root=$dest $dest$prefix/lib/tmpfiles.d/svc.conf 2>&1`;
    is $?, 0, 'systemd-tmpfiles accepts tmpfiles.d/svc.conf' or diag $to;
    my @st = stat "$dest/var/lib/svc";
    my @cf = stat "$dest/etc/svc/agents.yaml";
    ok @st && ($st[2] & 07777) == 0750 && $st[4] == $uid && @cf && $cf[5] == $gid
        && ($cf[2] & 07777) == 0640, '/var/lib/svc svc 0750, agents.yaml group svc 0640';
}

# the installed nginx files load in a real nginx
{
    my $p = SvcOps::tmpdir();
    mkdir "$p/$_" for qw(conf logs tmp);
    symlink "$dest/etc/nginx/svc", "$p/conf/svc" or die;
    my $user = $> == 0 ? 'user root;' : '';
    SvcTest::write_file("$p/conf/nginx.conf", <<"EOF");
$user
pid $p/nginx.pid;
error_log $p/logs/error.log;
events {}
http {
    client_body_temp_path $p/tmp/cb; proxy_temp_path $p/tmp/p; fastcgi_temp_path $p/tmp/f;
    uwsgi_temp_path $p/tmp/u; scgi_temp_path $p/tmp/s;
    include svc/svc-upstream.conf;
    server { listen 127.0.0.1:1; include svc/svc.conf; include svc/svc-errors.conf; }
}
EOF
    my $t = `nginx -t -p $p -c $p/conf/nginx.conf 2>&1`;
    is $?, 0, 'nginx -t with the installed files' or diag $t;
}

done_testing;
