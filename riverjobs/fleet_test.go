package riverjobs_test

// envRole names the role of a child process of the fleet test.
const envRole = "RIVERJOBS_ROLE"
