module gpuslots.test/images

go 1.25.0
