#!/usr/bin/perl
# The Debian package (SPEC 18, issue 41): `make deb`'s script builds it with Debian's tools,
# lintian reports no error and no warning that debian/README.source does not explain; it
# holds what the SPEC lists; `dpkg -i` on this machine creates the svc user, /var/lib/svc and
# /etc/svc (root:svc 0750, agents.yaml 0640, a conffile whose local edit survives a
# reinstall); the installed units pass systemd-analyze verify (programs and man pages where
# they name them); their ExecStart, run by hand as svc.socket + svc.service
# would run it (the socket on fd 0, User=, Environment=), answers a chat through a private
# nginx that includes the installed snippets; `dpkg -r` keeps the configuration and the
# sessions, `dpkg -P` removes them, and nothing the package made is left but the svc user.
#
# Machine-wide (dpkg, /usr/bin/svc, the svc user): the whole test holds /tmp/svc-dpkg.lock,
# and each dpkg call /tmp/svc-apt.lock too. It tests packaging, not code, so it runs in the
# plain `make test` pass only (CI's caches-off and ASan passes skip it).
use strict;
use warnings;
use lib 't/lib';
use Fcntl qw(:flock);
use File::Temp qw(tempdir);
use JSON::PP;
use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(time sleep);
use SvcTest;

inside(@ARGV[1 .. $#ARGV]) if @ARGV && $ARGV[0] eq '--inside';

plan skip_all => 'dpkg -i needs root' if $> != 0;
plan skip_all => 'tests packaging, not code: runs in the plain make test pass only'
    if SvcTest::cache_off() || (SvcTest::build() =~ m{/build-asan/?$});
plan skip_all => 'needs a mount namespace (unshare --mount) for /run/svc'
    if system('unshare --mount --propagation private true 2>/dev/null') != 0;
for my $tool (qw(dpkg-buildpackage dh lintian nginx)) {
    next if `command -v $tool 2>/dev/null`;
    BAIL_OUT("$tool is missing (scripts/install-deps installs it)");
}

my $repo = SvcTest::repo();
open my $lock, '>>', '/tmp/svc-dpkg.lock' or die "lock: $!";
flock $lock, LOCK_EX or die "flock: $!";

# Never on a machine that has svc installed or its data: purge would remove them.
my $pre = `dpkg-query -W -f='\${Status}' svc 2>/dev/null`;
plan skip_all => "the package svc is on this machine ($pre): this test would purge it"
    if $pre =~ /installed|config-files/;
for my $p (qw(/var/lib/svc /etc/svc /var/log/svc /usr/bin/svc /usr/sbin/svc-fcgi)) {
    plan skip_all => "$p exists (not from the package): purge would remove it" if -e $p;
}
my $user_before = defined getpwnam('svc');

my $tmp = tempdir('svc-deb-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $tmp;
my $version = SvcTest::read_file("$repo/VERSION") // '';
chomp $version;

# 1. build
my $t0 = time;
my $out = `'$repo/scripts/deb' '$tmp' 2>&1`;
is $? >> 8, 0, 'scripts/deb (make deb) builds the package, lintian reports no error' or diag $out;
my ($deb) = $out =~ m{^(\S+\.deb)$}m;
ok $deb && -f $deb, 'the .deb' or BAIL_OUT("no .deb:\n$out");
like $deb, qr{/svc_\Q$version\E_[a-z0-9]+\.deb$}, "named svc_${version}_ARCH.deb (VERSION)";
note sprintf 'built in %.1f s', time - $t0;
is `dpkg-deb -f '$deb' Version`, "$version\n", 'package version = VERSION';
unlike $out, qr/^  LINTIAN E:/m, 'no lintian error';
my $notes = SvcTest::read_file("$repo/debian/README.source") // '';
for my $w ($out =~ /^  LINTIAN W: svc: (\S+)/mg) {
    like $notes, qr/^- \Q$w\E\b/m, "lintian warning $w is explained in debian/README.source";
}
ok !-e "$repo/../svc_${version}_amd64.deb" || -M "$repo/../svc_${version}_amd64.deb" > 0.01,
    'nothing written beside the tree';

# 2. what it holds
my @files = map { m{^\S+ \S+ +\d+ \S+ \S+ \.(/\S*?)/?(?: -> .*)?$} ? $1 : () }
    split /\n/, `dpkg-deb -c '$deb'`;
my %has = map { $_ => 1 } @files;
for my $f (qw(/usr/bin/svc /usr/sbin/svc-fcgi /lib/systemd/system/svc.service
              /lib/systemd/system/svc.socket /lib/systemd/system/svc-jobs.service
              /lib/systemd/system/svc-jobs.timer /usr/share/svc/nginx/svc.conf
              /usr/share/svc/nginx/svc-upstream.conf /usr/share/svc/nginx/nginx-example.conf
              /usr/share/svc/apache/apache-proxy-fcgi.conf /usr/share/svc/apache/apache-fcgid.conf
              /usr/share/svc/dashboard/index.html /usr/share/svc/agents.yaml
              /etc/svc/agents.yaml /usr/share/man/man1/svc.1.gz
              /usr/share/man/man8/svc-fcgi.8.gz /usr/share/man/man5/agents.yaml.5.gz)) {
    ok $has{$f}, "the package holds $f";
}
my $conffiles = `dpkg-deb --ctrl-tarfile '$deb' | tar -xOf - ./conffiles 2>/dev/null`;
like $conffiles, qr{^/etc/svc/agents\.yaml$}m, '/etc/svc/agents.yaml is a conffile';

# 3. install
my $before = snapshot();
dpkg('-i', $deb);
my @pw = getpwnam('svc');
ok @pw, 'the svc user exists';
ok @pw && $pw[2] < 1000 && $pw[7] eq '/var/lib/svc' && $pw[8] =~ /nologin|false/,
    'a system user, home /var/lib/svc, no shell' or diag "@pw";
my $svc_uid = $pw[2] // -1;
my $svc_gid = getgrnam('svc') // -1;
sub mode_owner { my @s = stat $_[0]; @s ? sprintf('%04o %d:%d', $s[2] & 07777, $s[4], $s[5]) : 'missing' }
is mode_owner('/var/lib/svc'), "0750 $svc_uid:$svc_gid", '/var/lib/svc svc:svc 0750';
is mode_owner('/etc/svc'), "0750 0:$svc_gid", '/etc/svc root:svc 0750';
is mode_owner('/etc/svc/agents.yaml'), "0640 0:$svc_gid", '/etc/svc/agents.yaml root:svc 0640';
is `/usr/bin/svc --version`, "svc $version\n", 'svc --version says VERSION';
is `/usr/sbin/svc-fcgi --version`, "svc-fcgi $version\n", 'svc-fcgi --version too';
like `man -w svc-fcgi 2>&1`, qr{/usr/share/man/man8/svc-fcgi\.8\.gz}, 'man svc-fcgi finds the page';
SKIP: {
    skip 'systemd-analyze missing', 1 unless -x '/usr/bin/systemd-analyze';
    my $units = join ' ', map { "/lib/systemd/system/$_" } qw(svc.socket svc.service svc-jobs.service svc-jobs.timer);
    my $v = `systemd-analyze verify $units 2>&1`;
    ok $? == 0 && $v eq '', 'systemd-analyze verify: the installed units, their programs and man pages'
        or diag $v;
}

# the local edit of a conffile survives a reinstall of the package
my $conf = SvcTest::read_file('/etc/svc/agents.yaml') // '';
SvcTest::write_file('/etc/svc/agents.yaml', "# edited by t/81-deb.t\n$conf");
dpkg('-i', $deb);
like SvcTest::read_file('/etc/svc/agents.yaml') // '', qr/\A# edited by t\/81-deb\.t\n/,
    'dpkg keeps the local edit of /etc/svc/agents.yaml';
is mode_owner('/etc/svc/agents.yaml'), "0640 0:$svc_gid", 'and its mode';

# 4. serve: the installed units by hand, behind a private nginx on the installed snippets,
# in a private mount namespace (its own /run, where svc.socket's /run/svc/svc.sock goes)
my $port = SvcTest::free_port();
my $raw = `unshare --mount --propagation private $^X '$0' --inside $port '$tmp' 2>&1`;
my ($json) = $raw =~ /^RESULT (.*)$/m;
my $r = eval { decode_json($json // '') } // {};
diag $raw unless $json;
is $r->{health}, 200, 'GET /api/health through nginx' or diag $raw;
like $r->{chat} // '', qr/Echo: hello from the package/, 'POST /api/chat answers' or diag $raw;
is $r->{dashboard}, 200, 'the dashboard from /usr/share/svc/dashboard';
is $r->{nope}, 404, 'an unknown endpoint: 404';
is $r->{sock}, '0660 root:www-data', 'the socket as svc.socket makes it (SocketMode, SocketGroup)';
is $r->{worker_user}, 'svc', 'svc-fcgi runs as User=svc';
my @sess = glob '/var/lib/svc/agents/native_sessions/session_pkg-1';
ok @sess, 'the session is under /var/lib/svc (SVC_HOME of svc.service)';
is +(stat $sess[0])[4], $svc_uid, 'owned by svc' if @sess;

# 5. remove keeps configuration and data; purge removes them, and nothing else is left
dpkg('-r', 'svc');
ok !-e '/usr/bin/svc' && !-e '/usr/sbin/svc-fcgi', 'dpkg -r: the programs are gone';
ok -f '/etc/svc/agents.yaml', 'dpkg -r: the configuration stays';
ok -d '/var/lib/svc/agents', 'dpkg -r: the sessions stay';
dpkg('-P', 'svc');
ok !-e $_, "dpkg -P: $_ is gone" for qw(/etc/svc /var/lib/svc /var/log/svc);
is `dpkg-query -W -f='\${Status}' svc 2>/dev/null`, '', 'dpkg knows no svc any more';
my $after = snapshot();
my @left = grep { !$before->{$_} } sort keys %$after;
is_deeply \@left, [], 'nothing the package made is left' or diag join "\n", @left;
ok defined getpwnam('svc'), 'the svc user stays (Debian policy)';

# the machine as it was: the user only this test made
if (!$user_before && defined getpwnam('svc')) {
    system('userdel', 'svc') == 0 or diag 'userdel svc failed';
    system('groupdel', 'svc') if defined getgrnam('svc');
}
done_testing;

# dpkg ARGS under the apt lock (no apt-get of another test meanwhile); a failure fails.
sub dpkg {
    my @args = @_;
    my $o = `flock /tmp/svc-apt.lock dpkg @args 2>&1`;
    is $? >> 8, 0, "dpkg @args" or diag $o;
}

# The names containing "svc" where a package's files, users and systemd links go.
sub snapshot {
    my %seen;
    my @roots = grep { -d } qw(/etc /var/lib /var/log /usr/bin /usr/sbin /usr/share/man
                               /usr/share/doc /usr/share/svc /usr/lib/sysusers.d
                               /usr/lib/tmpfiles.d /lib/systemd /var/lib/dpkg/info);
    for (split /\n/, `find @roots -xdev 2>/dev/null`) { $seen{$_} = 1 if m{svc}i }
    return \%seen;
}

END { # a failed run leaves no package behind
    local $?;
    if ($> == 0 && !(@ARGV && $ARGV[0] eq '--inside')
        && `dpkg-query -W -f='\${Status}' svc 2>/dev/null` =~ /installed|config-files/) {
        system("flock /tmp/svc-apt.lock dpkg -P svc >/dev/null 2>&1");
    }
}

# --- inside the mount namespace -----------------------------------------------------------

# "Key=value" lines of a unit file (a key given twice keeps both, in order).
sub unit_keys {
    my ($path) = @_;
    my %k;
    for (split /\n/, SvcTest::read_file($path) // '') {
        push @{ $k{$1} }, $2 if /^(\w+)=(.*)$/;
    }
    return \%k;
}

# svc.socket and svc.service as systemd would run them: the socket (ListenStream=,
# SocketUser/Group/Mode, DirectoryMode), then ExecStart with it on fd 0 as User/Group, with
# Environment=, EnvironmentFile=- and UMask=; nginx with the installed snippets; the HTTP
# checks. Prints one line "RESULT {json}".
sub inside {
    my ($port, $dir) = @_;
    require IO::Socket::UNIX;
    require SvcOps;
    system('mount', '-t', 'tmpfs', 'tmpfs', '/run') == 0 or die 'mount /run';
    my $sk = unit_keys('/lib/systemd/system/svc.socket');
    my $sv = unit_keys('/lib/systemd/system/svc.service');
    my $path = $sk->{ListenStream}[0];
    (my $sdir = $path) =~ s{/[^/]+$}{};
    system('install', '-d', '-m', $sk->{DirectoryMode}[0] // '0755', $sdir) == 0 or die;
    my $ls = IO::Socket::UNIX->new(Local => $path, Listen => 128) or die "listen $path: $!";
    chown scalar(getpwnam($sk->{SocketUser}[0] // 'root')), scalar(getgrnam($sk->{SocketGroup}[0])), $path;
    chmod oct($sk->{SocketMode}[0]), $path;
    my @st = stat $path;
    my %r = (sock => sprintf('%04o %s:%s', $st[2] & 07777, scalar getpwuid($st[4]),
                             scalar getgrgid($st[5])));
    my @exec = split ' ', $sv->{ExecStart}[0];
    my $log = "$dir/svc-fcgi.log";
    my $pid = fork // die;
    if (!$pid) {
        open STDIN, '<&', $ls or POSIX::_exit(127);
        open STDOUT, '>>', $log;
        open STDERR, '>>', $log;
        %ENV = (PATH => '/usr/sbin:/usr/bin:/sbin:/bin', LANG => 'C.UTF-8');
        for (@{ $sv->{Environment} || [] }) { $ENV{$1} = $2 if /^(\w+)=(.*)$/ }
        for my $f (@{ $sv->{EnvironmentFile} || [] }) {
            (my $p = $f) =~ s/^-//;
            for (split /\n/, SvcTest::read_file($p) // '') { $ENV{$1} = $2 if /^(\w+)=(.*)$/ }
        }
        umask oct($sv->{UMask}[0] // '0022');
        my $gid = getgrnam($sv->{Group}[0]);
        my $uid = getpwnam($sv->{User}[0]);
        $) = "$gid $gid";
        $( = $gid;
        $< = $> = $uid;
        POSIX::_exit(126) if $> != $uid || $< != $uid;
        exec @exec or POSIX::_exit(127);
    }
    close $ls;
    my $prefix = "$dir/nginx";
    mkdir $_ for $prefix, "$prefix/logs", "$prefix/tmp";
    SvcTest::write_file("$prefix/nginx.conf", <<"EOF");
user www-data;
worker_processes 1;
daemon off;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $prefix/tmp/cb; proxy_temp_path $prefix/tmp/p;
    fastcgi_temp_path $prefix/tmp/f; uwsgi_temp_path $prefix/tmp/u; scgi_temp_path $prefix/tmp/s;
    include /usr/share/svc/nginx/svc-upstream.conf;
    server {
        listen 127.0.0.1:$port;
        include /usr/share/svc/nginx/svc.conf;
        include /usr/share/svc/nginx/svc-errors.conf;
    }
}
EOF
    chmod 0755, $dir, $prefix;
    my $npid = fork // die;
    if (!$npid) {
        open STDIN, '<', '/dev/null';
        open STDERR, '>>', "$prefix/logs/stderr.log";
        exec 'nginx', '-p', $prefix, '-c', "$prefix/nginx.conf" or POSIX::_exit(127);
    }
    my $base = "http://127.0.0.1:$port";
    SvcTest::wait_for(20, sub { (SvcOps::http(GET => "$base/api/health")->{status} // 0) == 200 });
    $r{health} = SvcOps::http(GET => "$base/api/health")->{status};
    my $c = SvcOps::http(POST => "$base/api/chat", body => {
        session_id => 'pkg-1', messages => [{ role => 'user', content => 'hello from the package' }] });
    $r{chat} = $c->{json}{choices}[0]{message}{content} // "$c->{status} " . ($c->{body} // '');
    $r{dashboard} = SvcOps::http(GET => "$base/")->{status};
    $r{nope} = SvcOps::http(GET => "$base/api/nope")->{status};
    my ($wpid) = `pgrep -P $pid` =~ /(\d+)/;
    $r{worker_user} = $wpid ? (split ' ', `ps -o user= -p $wpid`)[0] : undef;
    kill 'TERM', $npid, $pid;
    waitpid $_, 0 for $npid, $pid;
    $r{log} = SvcTest::read_file($log) if ($r{health} // 0) != 200;
    $r{nginx_log} = SvcTest::read_file("$prefix/logs/error.log") if ($r{health} // 0) != 200;
    print 'RESULT ', JSON::PP->new->canonical->encode(\%r), "\n";
    POSIX::_exit(0);
}
