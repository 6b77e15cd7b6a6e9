from fgrpo_sim.cli import main

main()
