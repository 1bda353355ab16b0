# Fleet rollout through Ansible (issue 15): the rig.smartnic collection in
# ansible/, tested by cmd/rig's TestAnsibleRigModuleMapsReports (the module
# against rig's report types), ansible's TestAnsibleSiteCheckMode (site.yml
# --check, local connections, a fake rig) and cmd/rig's TestPrivilegedAnsibleFleet (site.yml over
# real SSH against three virtual BlueFields, each with its own sshd in its
# lab's namespaces). They need Debian's ansible-core (and the last openssh-server):
# `make test` installs them (deps-fleet) when missing. openssh-server goes
# in without starting a daemon (a temporary policy-rc.d, as in Debian's
# container images) and, when this target installed it, its ssh.service is
# left disabled: the tests start their own sshd, inside lab namespaces only.
FLEET_PKGS := ansible-core openssh-server

.PHONY: deps-fleet test-fleet
test: deps-fleet

deps-fleet:
	@missing=""; for p in $(FLEET_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps-fleet: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps-fleet: need root to apt-get install$$missing" >&2; exit 1; fi; \
	  prc=/usr/sbin/policy-rc.d; made=""; \
	  if [ ! -e $$prc ]; then printf '#!/bin/sh\n# make deps-fleet: start no service while installing\nexit 101\n' > $$prc && chmod 755 $$prc && made=1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; rc=$$?; \
	  if [ -n "$$made" ]; then rm -f $$prc; fi; \
	  case " $$missing " in *" openssh-server "*) \
	    systemctl disable --quiet ssh.service 2>/dev/null || true; \
	    echo "make deps-fleet: openssh-server installed for the fleet test, its ssh.service not started and disabled";; \
	  esac; \
	  exit $$rc; \
	fi

# The fleet test alone (root; takes the lab lock other lab tests use).
test-fleet: deps deps-fleet
	flock /tmp/rig-lab.lock $(GO) test $(GOTAGS) -count=1 -timeout 20m -v -run 'TestAnsibleRigModuleMapsReports|TestAnsibleSiteCheckMode|TestPrivilegedAnsibleFleet' ./cmd/rig ./ansible
